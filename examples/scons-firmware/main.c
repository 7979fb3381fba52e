/* An application of the network library: one inference on float32 data.
 *   app [input.f32 [output.f32]]
 * input.f32: NNS_NET_INPUT_SIZE float32 values in the model's layout (else a test pattern);
 * the output's float32 values go to output.f32, or to stdout. */
#include <stdio.h>
#include <stdlib.h>

#include "nns_net.h"

int main(int argc, char **argv)
{
    static float input[NNS_NET_INPUT_SIZE], output[NNS_NET_OUTPUT_SIZE];
    void *arena = malloc(NNS_NET_ARENA_SIZE);
    int i, rc;
    if (!arena)
        return 2;
    if (argc > 1) {
        FILE *f = fopen(argv[1], "rb");
        if (!f || fread(input, sizeof(float), NNS_NET_INPUT_SIZE, f) != NNS_NET_INPUT_SIZE) {
            fprintf(stderr, "cannot read %d floats from %s\n", NNS_NET_INPUT_SIZE, argv[1]);
            return 2;
        }
        fclose(f);
    } else {
        for (i = 0; i < NNS_NET_INPUT_SIZE; ++i)
            input[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    }
    rc = nns_net_run_float(input, output, arena);
    if (rc != NNS_NET_OK) {
        fprintf(stderr, "nns_net_run_float: error %d\n", rc);
        return 1;
    }
    if (argc > 2) {
        FILE *f = fopen(argv[2], "wb");
        if (!f || fwrite(output, sizeof(float), NNS_NET_OUTPUT_SIZE, f) != NNS_NET_OUTPUT_SIZE)
            return 2;
        fclose(f);
    } else {
        for (i = 0; i < NNS_NET_OUTPUT_SIZE; ++i)
            printf("%s%g", i ? " " : "", output[i]);
        printf("\n");
    }
    free(arena);
    return 0;
}
