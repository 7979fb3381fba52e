"""Planning: content keys, the imported-model cache, and the helpers targets share."""
