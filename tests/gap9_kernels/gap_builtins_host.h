/* Host stand-ins for the GAP SDK compiler's Xpulp builtins that kernels/gap9/nn_xpulp.h uses
 * (NN_XPULP_BUILTIN), with their documented semantics (sdotsp4: signed x signed, sdotusp4:
 * unsigned first operand, max4: lane-wise signed maximum), so that the builtin variant's
 * own code (vector casts, operand order, aligned word loads) runs against the reference in
 * tests/test_gap9_kernels.py. Force-included with -include; GCC statement expressions. */
#define __builtin_pulp_sdotsp4(a, b, acc) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); int _s = (acc); \
    for (int _i = 0; _i < 4; _i++) { _s += (int)_a[_i] * (int)_b[_i]; } _s; })
#define __builtin_pulp_sdotusp4(a, b, acc) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); int _s = (acc); \
    for (int _i = 0; _i < 4; _i++) { _s += (int)_a[_i] * (int)_b[_i]; } _s; })
#define __builtin_pulp_max4(a, b) ({ __typeof__(a) _a = (a), _b = (b), _r; \
    for (int _i = 0; _i < 4; _i++) { _r[_i] = _a[_i] > _b[_i] ? _a[_i] : _b[_i]; } _r; })
