"""Graph passes between a frontend and the IR: BN folding, activation fusion, shapes,
quantization helpers and lowering (see opkit/opgraph.py for the graph they work on)."""
from ..opkit.opgraph import Op, OpGraph
from ..ops.move import merge_moves
from .bn_fold import fold_batchnorm
from .fuse import fuse_activations
from .lower import to_ir
from .shapes import infer_shapes


def prepare(g: OpGraph) -> None:
    """The structural passes every frontend runs before quantization."""
    fold_batchnorm(g)
    fuse_activations(g)
    merge_moves(g)
    infer_shapes(g)


__all__ = ["Op", "OpGraph", "fold_batchnorm", "fuse_activations", "infer_shapes", "prepare",
           "to_ir"]
