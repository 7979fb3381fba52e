/* CPU <-> AI RAM transfers in the KPU's layout (see kpu_hal.h). */
#include "kpu_hal.h"

static void layout(int w, int *groups, int *row_len)
{
    if (w <= 16) {
        *groups = 4;
        *row_len = 1;
    } else if (w <= 32) {
        *groups = 2;
        *row_len = 1;
    } else {
        *groups = 1;
        *row_len = (w + 63) / 64;
    }
}

static uint8_t *at(uint32_t line, int ch, int y, int c_h, int w)
{
    int groups, row_len;
    layout(w, &groups, &row_len);
    return kpu_hal_ai_ram() + (size_t)line * KPU_LINE
           + (size_t)(ch / groups) * row_len * c_h * KPU_LINE + (size_t)(ch % groups) * (KPU_LINE / groups)
           + (size_t)y * row_len * KPU_LINE;
}

void kpu_upload_s8(const int8_t *chw, int c, int h, int w, uint32_t line)
{
    for (int ch = 0; ch < c; ++ch)
        for (int y = 0; y < h; ++y) {
            uint8_t *dst = at(line, ch, y, h, w);
            const int8_t *src = chw + ((size_t)ch * h + y) * w;
            for (int x = 0; x < w; ++x)
                dst[x] = (uint8_t)(src[x] + 128);
        }
}

void kpu_download_s8(uint32_t line, int c, int h, int w, int8_t *chw)
{
    for (int ch = 0; ch < c; ++ch)
        for (int y = 0; y < h; ++y) {
            const uint8_t *src = at(line, ch, y, h, w);
            int8_t *dst = chw + ((size_t)ch * h + y) * w;
            for (int x = 0; x < w; ++x)
                dst[x] = (int8_t)(src[x] - 128);
        }
}

void kpu_upload_pixel_s8(const int8_t *vec, int c, int h, int w, uint32_t line)
{
    for (int ch = 0; ch < c; ++ch)
        *at(line, ch, 0, h, w) = (uint8_t)(vec[ch] + 128);
}

void kpu_download_pixel_s8(uint32_t line, int c, int h, int w, int8_t *vec)
{
    for (int ch = 0; ch < c; ++ch)
        vec[ch] = (int8_t)(*at(line, ch, 0, h, w) - 128);
}
