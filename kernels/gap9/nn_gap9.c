/* nnscons GAP9 runtime (see nn_gap9.h). Runs on the cluster's master core, but for the readfs
 * helpers at the end (the fabric controller). */
#include <stdio.h>
#include "nn_gap9.h"

void nn_dma_init(nn_dma_queue_t *q, int cap)
{
    q->cap = cap < 1 ? 1 : (cap > NN_DMA_MAX_INFLIGHT ? NN_DMA_MAX_INFLIGHT : cap);
    q->head = 0;
    q->live = 0;
}

/* The oldest outstanding command's slot. No `%`: the cluster cores divide in up to 35 cycles,
 * and a tile's stores issue a command per row (a conv tile's serial part on core 0). */
static int oldest(const nn_dma_queue_t *q)
{
    const int i = q->head - q->live;
    return i < 0 ? i + q->cap : i;
}

/* A free slot, waiting for the oldest command when the queue is full. */
static pi_cl_dma_cmd_t *slot(nn_dma_queue_t *q)
{
    if (q->live == q->cap) {
        pi_cl_dma_cmd_wait(&q->cmd[oldest(q)]);
        q->live--;
    }
    pi_cl_dma_cmd_t *c = &q->cmd[q->head];
    q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
    q->live++;
    return c;
}

void nn_dma_linear(nn_dma_queue_t *q, void *l2, void *l1, uint32_t size, pi_cl_dma_dir_e dir)
{
    uint32_t ext = (uint32_t)(uintptr_t)l2, loc = (uint32_t)(uintptr_t)l1;
    while (size) {
        const uint32_t n = size < NN_DMA_MAX_SIZE ? size : NN_DMA_MAX_SIZE;
        pi_cl_dma_cmd(ext, loc, n, dir, slot(q));
        ext += n;
        loc += n;
        size -= n;
    }
}

/* count chunks of `length` bytes, `stride` apart in L2, dense in L1, in commands of at
 * most NN_DMA_MAX_SIZE bytes. */
static void strided(nn_dma_queue_t *q, uint32_t ext, uint32_t loc, int count, uint32_t length,
                    uint32_t stride, pi_cl_dma_dir_e dir)
{
    if (count == 1 || length == stride) {
        nn_dma_linear(q, (void *)(uintptr_t)ext, (void *)(uintptr_t)loc, (uint32_t)count * length, dir);
        return;
    }
    if (length > NN_DMA_MAX_SIZE) {
        for (int i = 0; i < count; ++i)
            nn_dma_linear(q, (void *)(uintptr_t)(ext + i * stride), (void *)(uintptr_t)(loc + i * length),
                          length, dir);
        return;
    }
    /* one command when it fits (the common case: no division) */
    const int per_cmd = (uint32_t)count * length <= NN_DMA_MAX_SIZE ? count : (int)(NN_DMA_MAX_SIZE / length);
    for (int i = 0; i < count; i += per_cmd) {
        const int n = count - i < per_cmd ? count - i : per_cmd;
        pi_cl_dma_cmd_2d(ext + (uint32_t)i * stride, loc + (uint32_t)i * length, (uint32_t)n * length,
                         stride, length, dir, slot(q));
    }
}

void nn_dma_box(nn_dma_queue_t *q, void *l2, void *l1, int rows, int cols, int chans,
                int W, int C, pi_cl_dma_dir_e dir)
{
    const uint32_t ext = (uint32_t)(uintptr_t)l2, loc = (uint32_t)(uintptr_t)l1;
    if (rows <= 0 || cols <= 0 || chans <= 0)
        return;
    if (chans == C)             /* rows of cols*C contiguous bytes, W*C apart */
        strided(q, ext, loc, rows, (uint32_t)(cols * C), (uint32_t)(W * C), dir);
    else if (cols == W)         /* every pixel's channel slice, C apart, across rows */
        strided(q, ext, loc, rows * cols, (uint32_t)chans, (uint32_t)C, dir);
    else                        /* one strided command (or more) per row */
        for (int r = 0; r < rows; ++r)
            strided(q, ext + (uint32_t)(r * W * C), loc + (uint32_t)(r * cols * chans), cols,
                    (uint32_t)chans, (uint32_t)C, dir);
}

void nn_dma_wait_all(nn_dma_queue_t *q)
{
    while (q->live) {
        pi_cl_dma_cmd_wait(&q->cmd[oldest(q)]);
        q->live--;
    }
}

#ifndef NN_L3_FLASH
void nn_l3_to_l1(struct pi_device *ram, uint32_t l3, int8_t *bounce, int8_t *l1, uint32_t size)
{
    pi_cl_ram_req_t req;
    nn_dma_queue_t q;
    pi_cl_ram_read(ram, l3, bounce, size, &req);
    pi_cl_ram_read_wait(&req);
    nn_dma_init(&q, 1);
    nn_dma_linear(&q, bounce, l1, size, PI_CL_DMA_DIR_EXT2LOC);
    nn_dma_wait_all(&q);
}
#endif

static void stage_issue(nn_stage_t *s, int slab)
{
    const nn_slab_t *sl = &s->slabs[slab];
    uint8_t *buf = s->buf[slab & 1];
    for (int i = 0; i < sl->n_reads; ++i)
#ifdef NN_L3_FLASH
        pi_cl_fs_copy(s->files[sl->file], sl->read[i].l3, buf + sl->read[i].dst, sl->read[i].size, 1,
                      &s->req[slab & 1][i]);
#else
        pi_cl_ram_read(s->ram, s->l3_base + sl->read[i].l3, buf + sl->read[i].dst, sl->read[i].size,
                       &s->req[slab & 1][i]);
#endif
    s->issued = slab + 1;
}

const uint8_t *nn_stage_acquire(nn_stage_t *s, int slab)
{
    if (s->issued <= slab)
        stage_issue(s, slab);
    for (int i = 0; i < s->slabs[slab].n_reads; ++i)
#ifdef NN_L3_FLASH
        pi_cl_fs_wait(&s->req[slab & 1][i]);
#else
        pi_cl_ram_read_wait(&s->req[slab & 1][i]);
#endif
    /* the other buffer held slab - 1, already copied to L1 by its layer */
    if (slab + 1 < s->n_slabs && s->issued == slab + 1)
        stage_issue(s, slab + 1);
    return s->buf[slab & 1];
}

/* ---- the fabric controller's readfs files ------------------------------------------------------ */

int nn_readfs_mount(struct pi_device *flash, struct pi_device *fs)
{
    struct pi_default_flash_conf flash_conf;
    struct pi_readfs_conf fs_conf;
    pi_default_flash_conf_init(&flash_conf);
    pi_open_from_conf(flash, &flash_conf);
    if (pi_flash_open(flash))
        return -1;
    pi_readfs_conf_init(&fs_conf);
    fs_conf.fs.flash = flash;
    pi_open_from_conf(fs, &fs_conf);
    return pi_fs_mount(fs) ? -1 : 0;
}

pi_fs_file_t *nn_fs_open_exact(struct pi_device *fs, const char *name, long size)
{
    pi_fs_file_t *f = pi_fs_open(fs, name, 0);
    if (f == NULL)
        printf("ERROR cannot open %s\n", name);
    else if ((long)f->size != size) {
        printf("ERROR %s: expected exactly %ld bytes, found %u\n", name, size, (unsigned)f->size);
        pi_fs_close(f);
        f = NULL;
    }
    return f;
}

pi_fs_file_t *nn_fs_open_sized(struct pi_device *fs, const char *name, long size, int *why)
{
    pi_fs_file_t *f = pi_fs_open(fs, name, 0);
    *why = f == NULL ? NN_FS_MISSING : 0;
    if (f != NULL && (long)f->size != size) {
        pi_fs_close(f);
        f = NULL;
        *why = NN_FS_WRONG_SIZE;
    }
    return f;
}

int nn_fs_read_exact(pi_fs_file_t *f, void *dst, uint32_t size)
{
    return pi_fs_read(f, dst, size) == (int32_t)size ? 0 : -1;
}

int nn_check_golden(struct pi_device *fs, const char *name, int index, const char *id, const int8_t *got,
                    long size, int8_t *chunk, long chunk_size)
{
    pi_fs_file_t *f = nn_fs_open_exact(fs, name, size);
    long bad = 0, first = -1;
    int max_diff = 0, got_first = 0, want_first = 0;
    if (f == NULL)
        return -1;
    for (long done = 0; done < size; done += chunk_size) {
        const uint32_t n = (uint32_t)(size - done < chunk_size ? size - done : chunk_size);
        if (nn_fs_read_exact(f, chunk, n)) {
            pi_fs_close(f);
            return -1;
        }
        for (uint32_t k = 0; k < n; ++k) {
            const int want = chunk[k], have = got[done + k];
            const int d = have > want ? have - want : want - have;
            if (d) {
                if (first < 0) {
                    first = done + k;
                    got_first = have;
                    want_first = want;
                }
                ++bad;
                if (d > max_diff)
                    max_diff = d;
            }
        }
    }
    pi_fs_close(f);
    if (bad) {
        printf("layer %d %s: MISMATCH %ld/%ld elements, max |diff| %d, first at %ld (got %d, want %d)\n",
               index, id, bad, size, max_diff, first, got_first, want_first);
        return 1;
    }
    printf("layer %d %s: OK\n", index, id);
    return 0;
}
