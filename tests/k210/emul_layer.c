/* Test harness: run layers on the C KPU emulator from files.
 * usage: emul_layer WORDS PARAMS AI_RAM_IN AI_RAM_OUT
 *   WORDS     n x 12 little-endian uint64 (n layers, run in order)
 *   PARAMS    bytes mapped first (their bus address is the emulator's first, 0x80000000)
 *   AI_RAM_*  the 2 MiB AI RAM before and after
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kpu_hal.h"

static unsigned char *slurp(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *raw = malloc((size_t)*size + 512);
    unsigned char *buf = (unsigned char *)(((uintptr_t)raw + 255) / 256 * 256);
    if (fread(buf, 1, (size_t)*size, f) != (size_t)*size)
        exit(2);
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    long nw, np, na;
    if (argc != 5)
        return 2;
    unsigned char *words = slurp(argv[1], &nw);
    unsigned char *params = slurp(argv[2], &np);
    unsigned char *ram = slurp(argv[3], &na);
    if (na != (long)KPU_AI_RAM_SIZE || nw % 96)
        return 2;
    if (kpu_hal_map(params, (size_t)np) != 0x80000000u)
        return 2;
    memcpy(kpu_hal_ai_ram(), ram, KPU_AI_RAM_SIZE);
    for (long i = 0; i < nw / 96; ++i) {
        uint64_t w[KPU_NUM_WORDS];
        for (int j = 0; j < KPU_NUM_WORDS; ++j) {
            w[j] = 0;
            for (int b = 7; b >= 0; --b)
                w[j] = (w[j] << 8) | words[i * 96 + j * 8 + b];
        }
        kpu_hal_run(w);
    }
    FILE *f = fopen(argv[4], "wb");
    if (!f || fwrite(kpu_hal_ai_ram(), 1, KPU_AI_RAM_SIZE, f) != KPU_AI_RAM_SIZE)
        return 2;
    fclose(f);
    return 0;
}
