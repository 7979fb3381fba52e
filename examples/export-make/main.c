/* One inference on int8 tensors through a vendored export of simplecnn:
 *   app [input.bin [output.bin]]
 * input.bin: NNS_SIMPLECNN_INPUT_INPUT_BYTES int8 codes in the header's layout (else a test
 * pattern); prints each output class's real value and the best one, and writes the int8
 * output to output.bin when named. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nns_simplecnn.h"

static uint8_t arena[NNS_SIMPLECNN_ARENA_SIZE];

int main(int argc, char **argv)
{
    static int8_t x[NNS_SIMPLECNN_INPUT_INPUT_BYTES], y[NNS_SIMPLECNN_OUTPUT_OUTPUT_BYTES];
    const int8_t *inputs[] = { x };
    int8_t *outputs[] = { y };
    nns_simplecnn_t net;
    int st, k, best = 0;
    if (argc > 1) {
        FILE *f = fopen(argv[1], "rb");
        if (!f || fread(x, 1, sizeof x, f) != sizeof x) {
            fprintf(stderr, "cannot read %d bytes from %s\n", (int)sizeof x, argv[1]);
            return 2;
        }
        fclose(f);
    } else {
        for (k = 0; k < (int)sizeof x; ++k)      /* a diagonal stripe, in the zero point's units */
            x[k] = (int8_t)(NNS_SIMPLECNN_INPUT_INPUT_ZERO_POINT + ((k / NNS_SIMPLECNN_INPUT_INPUT_W) == (k % NNS_SIMPLECNN_INPUT_INPUT_W) ? 60 : 0));
    }
    if ((st = nns_simplecnn_init(&net, arena, sizeof arena)) != 0
        || (st = nns_simplecnn_run(&net, inputs, outputs)) != 0) {
        fprintf(stderr, "nns_simplecnn: %s\n", nns_simplecnn_strerror(st));
        return 1;
    }
    nns_simplecnn_deinit(&net);
    for (k = 0; k < NNS_SIMPLECNN_OUTPUT_OUTPUT_ELEMENTS; ++k) {
        printf("class %d: %g\n", k, NNS_SIMPLECNN_OUTPUT_OUTPUT_SCALE * (y[k] - NNS_SIMPLECNN_OUTPUT_OUTPUT_ZERO_POINT));
        if (y[k] > y[best])
            best = k;
    }
    printf("best: class %d\n", best);
    if (argc > 2) {
        FILE *f = fopen(argv[2], "wb");
        if (!f || fwrite(y, 1, sizeof y, f) != sizeof y)
            return 2;
        fclose(f);
    }
    return 0;
}
