/*
 * emul_ram.c - the external RAM (L3, the GAP9 EVK's APS256XXN): pi_ram_alloc/free in the L3 arena,
 * pi_ram_* transfers on the FC (done at once), pi_cl_ram_* requests on the cluster (landed at
 * their wait by emul_xfer.c). See pmsis.h.
 */
#include <string.h>

#include "pmsis_emul_internal.h"

/* pi_ram_open stores &ram_tag in device->data; pi_aps25xxxn_conf_init stores RAM_API_TAG in the
 * conf's api field, so that open can tell an initialized conf. */
static int ram_tag;
#define RAM_API_TAG ((pi_ram_api_t *)(void *)&ram_tag)

static int ram_open;

void pi_aps25xxxn_conf_init(struct pi_aps25xxxn_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->ram.api = RAM_API_TAG;
    conf->spi_cs = 1;
    conf->ram_size = (int)NN_EMUL_L3_SIZE;
}

static void check_ram_dev(struct pi_device *device, const char *api)
{
    if (!device || device->data != (void *)&ram_tag || !ram_open)
        fail("%s: the device is not an opened RAM device (pi_ram_open)", api);
}

int32_t pi_ram_open(struct pi_device *device)
{
    struct pi_ram_conf *conf;
    nn_emul_init();
    nn_emul_require_fc("pi_ram_open");
    if (!device || !device->config)
        fail("pi_ram_open: no conf (pi_open_from_conf)");
    conf = (struct pi_ram_conf *)device->config;
    if (conf->api != RAM_API_TAG)
        fail("pi_ram_open: the conf was not initialized by pi_default_ram_conf_init");
    nn_emul_lock();
    if (ram_open)
        fail("pi_ram_open: the RAM is already open");
    ram_open = 1;
    nn_emul_arena_reset(&nn_emul_l3);
    nn_emul_unlock();
    device->data = (void *)&ram_tag;
    return 0;
}

void pi_ram_close(struct pi_device *device)
{
    nn_emul_init();
    nn_emul_require_fc("pi_ram_close");
    nn_emul_lock();
    check_ram_dev(device, "pi_ram_close");
    if (nn_emul_pending_count(NN_EMUL_XFER_RAM, NULL, NULL, NULL))
        fail("pi_ram_close: RAM requests are still in flight");
    ram_open = 0;
    nn_emul_arena_reset(&nn_emul_l3);
    nn_emul_unlock();
    device->data = NULL;
}

int pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size)
{
    uint32_t off;
    nn_emul_init();
    nn_emul_require_fc("pi_ram_alloc");
    nn_emul_lock();
    check_ram_dev(device, "pi_ram_alloc");
    if (!addr)
        fail("pi_ram_alloc: addr is NULL");
    if (size == 0)
        fail("pi_ram_alloc(0): the size must be > 0");
    off = nn_emul_arena_alloc(&nn_emul_l3, size, 4, NN_EMUL_BLK_USER, NULL, "pi_ram_alloc");
    *addr = PMSIS_EMUL_L3_BASE + off;
    nn_emul_unlock();
    return 0;
}

int pi_ram_free(struct pi_device *device, uint32_t addr, uint32_t size)
{
    nn_emul_init();
    nn_emul_require_fc("pi_ram_free");
    nn_emul_lock();
    check_ram_dev(device, "pi_ram_free");
    nn_emul_arena_free(&nn_emul_l3, addr, size, "pi_ram_free");
    nn_emul_unlock();
    return 0;
}

static void ram_xfer(int async, const char *api, struct pi_device *device, uint32_t ram_addr,
                     void *data, uint32_t size, uint32_t stride, uint32_t length, int ext2loc,
                     int is_2d, pi_cl_ram_req_t *req)
{
    uint32_t span;
    uint8_t *s;
    nn_emul_init();
    if (async)
        nn_emul_require_cluster(api);
    else
        nn_emul_require_fc(api);
    nn_emul_lock();
    check_ram_dev(device, api);
    if (async && !req)
        fail("%s: req is NULL", api);
    if (size == 0)
        fail("%s: size 0", api);
    span = nn_emul_xfer_span(api, size, &stride, &length, is_2d);
    if (ram_addr < PMSIS_EMUL_L3_BASE || ram_addr - PMSIS_EMUL_L3_BASE >= nn_emul_l3.size)
        fail("%s: 0x%08lx is not an L3 address (pi_ram_alloc returns 0x%08lx..0x%08lx)", api,
             (unsigned long)ram_addr, (unsigned long)PMSIS_EMUL_L3_BASE,
             (unsigned long)(PMSIS_EMUL_L3_BASE + nn_emul_l3.size));
    nn_emul_check_block(&nn_emul_l3, ram_addr, span, api, "RAM (L3)");
    nn_emul_check_l2_buffer(data, size, api);
    s = nn_emul_l3.mem + (ram_addr - PMSIS_EMUL_L3_BASE);
    if (!async) {
        if (ext2loc)
            nn_emul_gather((uint8_t *)data, s, size, stride, length);
        else
            nn_emul_scatter(s, (const uint8_t *)data, size, stride, length);
        nn_emul_count_transfer(NN_EMUL_XFER_RAM, size);
    } else {
        req->device = device;
        req->addr = data;
        req->pi_ram_addr = ram_addr;
        req->size = size;
        req->stride = (int32_t)stride;
        req->length = length;
        req->done = 0;
        req->ext2loc = (unsigned char)(ext2loc != 0);
        req->is_2d = (unsigned char)is_2d;
        nn_emul_xfer_issue(NN_EMUL_XFER_RAM, api, req, &req->id, (uint8_t *)data, (uintptr_t)data,
                           s, ram_addr, size, stride, length, ext2loc != 0);
    }
    nn_emul_unlock();
}

void pi_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size)
{
    ram_xfer(0, "pi_ram_read", device, pi_ram_addr, data, size, 0, 0, 1, 0, NULL);
}

void pi_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size)
{
    ram_xfer(0, "pi_ram_write", device, pi_ram_addr, data, size, 0, 0, 0, 0, NULL);
}

void pi_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                 int ext2loc)
{
    ram_xfer(0, "pi_ram_copy", device, pi_ram_addr, data, size, 0, 0, ext2loc, 0, NULL);
}

void pi_ram_read_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                    uint32_t stride, uint32_t length)
{
    ram_xfer(0, "pi_ram_read_2d", device, pi_ram_addr, data, size, stride, length, 1, 1, NULL);
}

void pi_ram_write_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                     uint32_t stride, uint32_t length)
{
    ram_xfer(0, "pi_ram_write_2d", device, pi_ram_addr, data, size, stride, length, 0, 1, NULL);
}

void pi_ram_copy_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                    uint32_t stride, uint32_t length, int ext2loc)
{
    ram_xfer(0, "pi_ram_copy_2d", device, pi_ram_addr, data, size, stride, length, ext2loc, 1,
             NULL);
}

void pi_cl_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_read", device, pi_ram_addr, addr, size, 0, 0, 1, 0, req);
}

void pi_cl_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                     pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_write", device, pi_ram_addr, addr, size, 0, 0, 0, 0, req);
}

void pi_cl_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    int ext2loc, pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_copy", device, pi_ram_addr, addr, size, 0, 0, ext2loc, 0, req);
}

void pi_cl_ram_read_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                       uint32_t stride, uint32_t length, pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_read_2d", device, pi_ram_addr, addr, size, stride, length, 1, 1, req);
}

void pi_cl_ram_write_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr,
                        uint32_t size, uint32_t stride, uint32_t length, pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_write_2d", device, pi_ram_addr, addr, size, stride, length, 0, 1, req);
}

void pi_cl_ram_copy_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                       uint32_t stride, uint32_t length, int ext2loc, pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_copy_2d", device, pi_ram_addr, addr, size, stride, length, ext2loc, 1,
             req);
}

static void ram_wait(const char *api, pi_cl_ram_req_t *req)
{
    nn_emul_init();
    nn_emul_require_cluster(api);
    nn_emul_lock();
    nn_emul_xfer_wait(NN_EMUL_XFER_RAM, api, req);
    req->done = 1;
    nn_emul_unlock();
}

void pi_cl_ram_read_wait(pi_cl_ram_req_t *req)
{
    ram_wait("pi_cl_ram_read_wait", req);
}

void pi_cl_ram_write_wait(pi_cl_ram_req_t *req)
{
    ram_wait("pi_cl_ram_write_wait", req);
}

void pi_cl_ram_copy_wait(pi_cl_ram_req_t *req)
{
    ram_wait("pi_cl_ram_copy_wait", req);
}
