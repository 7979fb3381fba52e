"""Safe C identifiers and file names from untrusted model node names.

Node names come from model files and end up as C symbols and as file names under
build/ (`<name>.c`, `<name>_weights.bin`), so they must be valid identifiers, safe as
path components, and unique even on case-insensitive file systems (macOS, Windows).
"""
from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_LEN = 48

# C99/C11/C23 and C++ keywords (layer sources are compiled as C or C++ for AIE
# kernels), plus `main`, which any firmware already defines.
_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto
if inline int long register restrict return short signed sizeof static struct switch
typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex
_Generic _Imaginary _Noreturn _Static_assert _Thread_local alignas alignof bool
constexpr false nullptr static_assert thread_local true typeof typeof_unqual
and and_eq asm bitand bitor catch char8_t char16_t char32_t class compl concept consteval
constinit const_cast co_await co_return co_yield decltype delete dynamic_cast explicit
export friend mutable namespace new noexcept not not_eq operator or or_eq private
protected public reinterpret_cast requires static_cast template this throw try typeid
typename using virtual wchar_t xor xor_eq main
""".split())

# Device names Windows refuses as file names, whatever the extension.
_WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{d}{i}" for d in ("com", "lpt") for i in range(1, 10)])

# Prefixes of the symbols our own templates generate.
_OWN_PREFIXES = ("nn_", "net_")


def _digest(name: str) -> str:
    return hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _sanitize(name: str) -> str:
    # Transliterate accents (é -> e) so names stay readable; other non-ASCII -> '_'.
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    s = re.sub(r"[^A-Za-z0-9]+", "_", ascii_name).strip("_")
    if not s and name.strip("_"):
        # Nothing usable survived ('日本', '..'): a hash, not a counter, so adding
        # a node elsewhere does not rename this one (and rebuild its files).
        s = "l_" + _digest(name)
    lower = s.lower()
    if (not s or s[0].isdigit() or s in _RESERVED or lower in _WINDOWS_DEVICES
            or lower.startswith(_OWN_PREFIXES)):
        s = "l_" + s
    if len(s) > MAX_LEN:
        s = s[:MAX_LEN - 9].rstrip("_") + "_" + _digest(name)
    return s


def c_model_name(model_name: str) -> str:
    """The model name as the one C identifier everything model-wide is named after:
    nns_<model>_run and NNS_<MODEL>_... of its API, the library's files, the k210 board
    project (a name that sanitizes to no identifier: 'model')."""
    cname = c_names([model_name])[model_name]
    return cname.lower() if cname.isidentifier() else "model"


def _with_suffix(base: str, n: int) -> str:
    suffix = f"_{n}"
    return base[:MAX_LEN - len(suffix)].rstrip("_") + suffix


def c_names(names: list) -> dict:
    """Map each distinct name to a unique identifier [A-Za-z_][A-Za-z0-9_]{0,47}.

    Deterministic and order-dependent only through first occurrence: the first name
    that sanitizes to `conv` keeps it, later ones (`Conv`, `conv/`) become `conv_2`,
    `conv_3`, ... skipping anything another name sanitizes to, compared
    case-insensitively.
    """
    distinct = list(dict.fromkeys(names))
    bases = [_sanitize(n) for n in distinct]
    # Reserve every plain base first so a suffixed duplicate never steals a later
    # name's own identifier (['conv', 'Conv', 'conv_2'] -> conv, Conv_3, conv_2).
    reserved = {b.lower() for b in bases}
    taken = set()
    result = {}
    for name, base in zip(distinct, bases):
        ident = base
        if ident.lower() in taken:
            n = 2
            while (_with_suffix(base, n).lower() in taken
                   or _with_suffix(base, n).lower() in reserved):
                n += 1
            ident = _with_suffix(base, n)
        taken.add(ident.lower())
        result[name] = ident
    return result
