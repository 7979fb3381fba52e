/* The KPU as the generated code sees it: AI RAM, SRAM bus addresses and one call that runs a
 * layer from its 12 64-bit argument words (field layout: the Kendryte SDK's kpu.h).
 *
 * Builds:
 *   kpu_emul.c   (platform=emul and qemu) a C emulator that decodes the same 12 words, reads the
 *                same AI-RAM bytes and parameter tables and computes exactly what the NumPy model
 *                (site_scons/nnscons/targets/k210/kpu.py) computes
 *   kpu_board.c  (platform=board) the real registers: the words go to the layer-argument FIFO
 *                at 0x40800000, the AI RAM is the 2 MiB at 0x40600000
 */
#ifndef KPU_HAL_H
#define KPU_HAL_H

#include <stddef.h>
#include <stdint.h>

#define KPU_AI_RAM_SIZE (2u * 1024u * 1024u)
#define KPU_LINE 64u
#define KPU_NUM_WORDS 12

/* The AI RAM as the CPU reads and writes it. */
uint8_t *kpu_hal_ai_ram(void);

/* The 32-bit address the KPU uses for `size` bytes at p (parameters in SRAM); p must stay
 * valid while layers use it; the same (p, size) gives the same address. The emulator hands
 * out addresses of its own and checks every access against the registered regions. */
uint32_t kpu_hal_map(const void *p, size_t size);

/* Push one layer's 12 words and wait until the layer is done. */
void kpu_hal_run(const uint64_t words[KPU_NUM_WORDS]);

/* CPU <-> AI RAM in the KPU layout (64-byte lines, a row takes ceil(W/64) lines, 4 channels
 * share a line when W <= 16, 2 when W <= 32), int8 (CPU) <-> uint8 (KPU) by adding 128. */
void kpu_upload_s8(const int8_t *chw, int c, int h, int w, uint32_t line);
void kpu_download_s8(uint32_t line, int c, int h, int w, int8_t *chw);
/* A vector of c values as pixel (0, 0) of each channel of a (c, h, w) map, and back (the
 * fully connected layer as a 1x1 conv); the other pixels are left as they are. */
void kpu_upload_pixel_s8(const int8_t *vec, int c, int h, int w, uint32_t line);
void kpu_download_pixel_s8(uint32_t line, int c, int h, int w, int8_t *vec);

#endif /* KPU_HAL_H */
