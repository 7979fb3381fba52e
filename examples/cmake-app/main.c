/* An application of the network library: one inference on float32 data.
 *   app [input.f32 [output.f32]]
 * input.f32: the first input's float32 values in the model's own layout (else a test
 * pattern); the first output's float32 values go to output.f32, or to stdout.
 * The API on one page: nns_simplecnn.h (init over an arena, run / run_float, deinit, strerror,
 * the tensors' descriptors). */
#include <stdio.h>
#include <stdlib.h>

#include "nns_simplecnn.h"

int main(int argc, char **argv)
{
    const nns_simplecnn_tensor *in = nns_simplecnn_input(0), *out = nns_simplecnn_output(0);
    float *input = malloc(in->float_bytes), *output = malloc(out->float_bytes);
    void *arena = malloc(NNS_SIMPLECNN_ARENA_SIZE);
    const float *inputs[NNS_SIMPLECNN_NUM_INPUTS] = { 0 };
    float *outputs[NNS_SIMPLECNN_NUM_OUTPUTS] = { 0 };
    nns_simplecnn_t net;
    size_t i;
    int rc;
    if (!input || !output || !arena || NNS_SIMPLECNN_NUM_INPUTS != 1 || NNS_SIMPLECNN_NUM_OUTPUTS != 1)
        return 2;
    if (argc > 1) {
        FILE *f = fopen(argv[1], "rb");
        if (!f || fread(input, sizeof(float), in->elements, f) != in->elements) {
            fprintf(stderr, "cannot read %zu floats from %s\n", in->elements, argv[1]);
            return 2;
        }
        fclose(f);
    } else {
        for (i = 0; i < in->elements; ++i)
            input[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    }
    rc = nns_simplecnn_init(&net, arena, NNS_SIMPLECNN_ARENA_SIZE);
    if (rc != NNS_SIMPLECNN_OK) {
        fprintf(stderr, "nns_simplecnn_init: %s\n", nns_simplecnn_strerror(rc));
        return 1;
    }
    inputs[0] = input;
    outputs[0] = output;
    rc = nns_simplecnn_run_float(&net, inputs, outputs);
    nns_simplecnn_deinit(&net);
    if (rc != NNS_SIMPLECNN_OK) {
        fprintf(stderr, "nns_simplecnn_run_float: %s\n", nns_simplecnn_strerror(rc));
        return 1;
    }
    if (argc > 2) {
        FILE *f = fopen(argv[2], "wb");
        if (!f || fwrite(output, sizeof(float), out->elements, f) != out->elements)
            return 2;
        fclose(f);
    } else {
        for (i = 0; i < out->elements; ++i)
            printf("%s%g", i ? " " : "", output[i]);
        printf("\n");
    }
    free(arena);
    free(input);
    free(output);
    return 0;
}
