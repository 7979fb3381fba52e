/* kpu_hal.h on a real K210 (platform=board, built by the Kendryte standalone SDK): the KPU's
 * registers at 0x40800000 (layer-argument FIFO, interrupt status/raw/mask/clear, FIFO
 * threshold, data out, FIFO control, 8-bit mode: kpu.h's kpu_config_t), the AI RAM at
 * 0x40600000 (uncached alias). Parameter addresses go to the KPU through the SRAM's uncached
 * alias (address - IOMEM, 0x40000000), as nncase 1.x's K210 runtime hands them over
 * (kpu_conv2d: para_start_addr, bwsx_base_addr, active_addr = pointer - IOMEM); the
 * parameters are read-only data of the image, never written by the CPU. Not run here: the
 * emulator (kpu_emul.c) stands in for it on emul and qemu, with the same words and AI-RAM
 * bytes. */
#include <stdint.h>

#include "kpu_hal.h"
#include "sysctl.h"

#define KPU_IOMEM 0x40000000u  /* the SDK's IOMEM: SRAM at 0x80000000 seen uncached at 0x40000000 */
#define KPU_REG(off) (*(volatile uint64_t *)(uintptr_t)(0x40800000u + (off)))
#define KPU_FIFO KPU_REG(0x00)
#define KPU_INT_RAW KPU_REG(0x10)
#define KPU_INT_MASK KPU_REG(0x18)
#define KPU_INT_CLEAR KPU_REG(0x20)
#define KPU_FIFO_THRESHOLD KPU_REG(0x28)
#define KPU_FIFO_CTRL KPU_REG(0x38)
#define KPU_EIGHT_BIT KPU_REG(0x40)

/* The KPU's configuration, written before every layer (a few register writes, nothing in flight
 * between layers): the HAL keeps no state of its own. */
static void kpu_init(void)
{
    sysctl_clock_enable(SYSCTL_CLOCK_AI);
    KPU_INT_CLEAR = 7;               /* calc_done, layer_cfg_almost_empty, layer_cfg_almost_full */
    KPU_INT_MASK = 7;                /* polled, no interrupt to the PLIC */
    KPU_FIFO_THRESHOLD = 10 | (1 << 4);
    KPU_FIFO_CTRL = 0x1f;            /* un-flush every FIFO */
    KPU_EIGHT_BIT = 1;               /* 8-bit data */
}

uint8_t *kpu_hal_ai_ram(void)
{
    return (uint8_t *)(uintptr_t)0x40600000u;
}

uint32_t kpu_hal_map(const void *p, size_t size)
{
    (void)size;
    return (uint32_t)((uintptr_t)p - KPU_IOMEM);   /* the uncached alias, as nncase's runtime */
}

void kpu_hal_run(const uint64_t words[KPU_NUM_WORDS])
{
    kpu_init();
    for (int i = 0; i < KPU_NUM_WORDS; ++i)
        KPU_FIFO = words[i];
    while (!(KPU_INT_RAW & 1))       /* calc_done */
        ;
    KPU_INT_CLEAR = 7;
}
