/*
 * emul_fs.c - the flash (only opened, for readfs) and the file system: readfs and hostfs files are
 * host files (relative names under $NN_EMUL_FS_DIR), read on the FC (pi_fs_*) or by the cluster
 * through pi_cl_fs_copy (read at the call, landed at pi_cl_fs_wait by emul_xfer.c). See pmsis.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmsis_emul_internal.h"

#define NN_EMUL_FS_PATH_MAX 4096

/* The open / mount functions store &flash_tag / &fs_tag in device->data; the conf_init functions
 * store the API tags in the conf's api field, so that open / mount can tell an initialized conf. */
static int flash_tag, fs_tag;
#define FLASH_API_TAG ((pi_flash_api_t *)(void *)&flash_tag)
#define FS_API_TAG ((pi_fs_api_t *)(void *)&fs_tag)

/* ---- flash (only opened, for readfs) ------------------------------------------------------- */

void pi_mx25u51245g_conf_init(struct pi_mx25u51245g_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->flash.api = FLASH_API_TAG;
}

int pi_flash_open(struct pi_device *device)
{
    nn_emul_init();
    nn_emul_require_fc("pi_flash_open");
    if (!device || !device->config)
        fail("pi_flash_open: no conf (pi_open_from_conf)");
    if (((struct pi_flash_conf *)device->config)->api != FLASH_API_TAG)
        fail("pi_flash_open: the conf was not initialized by pi_default_flash_conf_init");
    device->data = (void *)&flash_tag;
    return 0;
}

void pi_flash_close(struct pi_device *device)
{
    nn_emul_require_fc("pi_flash_close");
    if (!device || device->data != (void *)&flash_tag)
        fail("pi_flash_close: the device is not an opened flash device");
    device->data = NULL;
}

/* ---- file system --------------------------------------------------------------------------- */

#define FILE_MAGIC 0x46494c45u

typedef struct {
    pi_fs_file_t pub; /* first: the program holds &pub */
    FILE *fp;
    uint32_t magic;
} emul_file_t;

void pi_fs_conf_init(struct pi_fs_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->type = PI_FS_READ_ONLY;
    conf->api = FS_API_TAG;
}

void pi_readfs_conf_init(struct pi_readfs_conf *conf)
{
    pi_fs_conf_init(&conf->fs);
}

void pi_hostfs_conf_init(struct pi_hostfs_conf *conf)
{
    pi_fs_conf_init(&conf->fs);
    conf->fs.type = PI_FS_HOST;
}

int32_t pi_fs_mount(struct pi_device *device)
{
    struct pi_fs_conf *conf;
    nn_emul_init();
    nn_emul_require_fc("pi_fs_mount");
    if (!device || !device->config)
        fail("pi_fs_mount: no conf (pi_open_from_conf)");
    conf = (struct pi_fs_conf *)device->config;
    if (conf->api != FS_API_TAG)
        fail("pi_fs_mount: the conf was not initialized by pi_readfs_conf_init / "
             "pi_hostfs_conf_init");
    if (conf->type == PI_FS_READ_ONLY) {
        if (!conf->flash || conf->flash->data != (void *)&flash_tag)
            fail("pi_fs_mount: a readfs needs conf.fs.flash = an opened flash device "
                 "(pi_flash_open)");
    } else if (conf->type != PI_FS_HOST) {
        fail("pi_fs_mount: file-system type %d is not emulated (readfs and hostfs are)",
             (int)conf->type);
    }
    device->data = (void *)&fs_tag;
    return 0;
}

void pi_fs_unmount(struct pi_device *device)
{
    nn_emul_require_fc("pi_fs_unmount");
    if (!device || device->data != (void *)&fs_tag)
        fail("pi_fs_unmount: the device is not a mounted file system");
    device->data = NULL;
}

pi_fs_file_t *pi_fs_open(struct pi_device *device, const char *file, int flags)
{
    char path[NN_EMUL_FS_PATH_MAX];
    const char *dir = getenv("NN_EMUL_FS_DIR");
    emul_file_t *f;
    FILE *fp;
    long size;
    int n;
    nn_emul_init();
    nn_emul_require_fc("pi_fs_open");
    if (!device || device->data != (void *)&fs_tag)
        fail("pi_fs_open: the device is not a mounted file system (pi_fs_mount)");
    if (!file || !*file)
        fail("pi_fs_open: no file name");
    if (flags != PI_FS_FLAGS_READ)
        fail("pi_fs_open(\"%s\", %d): only reading is emulated (readfs is read-only)", file, flags);
    if (file[0] == '/' || !dir || !*dir)
        n = snprintf(path, sizeof path, "%s", file);
    else
        n = snprintf(path, sizeof path, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= sizeof path)
        fail("pi_fs_open: the path of \"%s\" is too long", file);
    fp = fopen(path, "rb");
    if (!fp) {
        /* the device model says which host file it tried (the library only returns a status) */
        fprintf(stderr, "PMSIS-EMUL: pi_fs_open: no file %s (the readfs is $NN_EMUL_FS_DIR%s%s)\n", path,
                dir && *dir ? " = " : ", unset: ", dir && *dir ? dir : "the working directory");
        return NULL;
    }
    if (fseek(fp, 0, SEEK_END) || (size = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET))
        fail("pi_fs_open: cannot find the size of %s", path);
    if ((unsigned long)size > 0xffffffffu)
        fail("pi_fs_open: %s is larger than 4 GiB", path);
    f = (emul_file_t *)calloc(1, sizeof *f);
    if (!f)
        fail("pi_fs_open: out of host memory");
    f->pub.fs = device;
    f->pub.api = FS_API_TAG;
    f->pub.data = fp;
    f->pub.size = (unsigned int)size;
    f->pub.fs_data = NULL;
    f->fp = fp;
    f->magic = FILE_MAGIC;
    return &f->pub;
}

static emul_file_t *check_file(pi_fs_file_t *file, const char *api)
{
    emul_file_t *f = (emul_file_t *)file;
    nn_emul_require_fc(api);
    if (!file || f->magic != FILE_MAGIC)
        fail("%s: not an open file (pi_fs_open)", api);
    return f;
}

void pi_fs_close(pi_fs_file_t *file)
{
    emul_file_t *f = check_file(file, "pi_fs_close");
    fclose(f->fp);
    f->magic = 0;
    free(f);
}

int32_t pi_fs_read(pi_fs_file_t *file, void *buffer, uint32_t size)
{
    emul_file_t *f = check_file(file, "pi_fs_read");
    size_t got;
    if (size == 0)
        return 0;
    nn_emul_lock();
    nn_emul_check_l2_buffer(buffer, size, "pi_fs_read");
    nn_emul_unlock();
    got = fread(buffer, 1, size, f->fp);
    if (got < size && ferror(f->fp))
        fail("pi_fs_read: read error");
    return (int32_t)got;
}

int32_t pi_fs_direct_read(pi_fs_file_t *file, void *buffer, uint32_t size)
{
    return pi_fs_read(file, buffer, size);
}

int32_t pi_fs_seek(pi_fs_file_t *file, unsigned int offset)
{
    emul_file_t *f = check_file(file, "pi_fs_seek");
    if (offset > f->pub.size)
        fail("pi_fs_seek(%u): beyond the end of the file (%u bytes)", offset, f->pub.size);
    if (fseek(f->fp, (long)offset, SEEK_SET))
        fail("pi_fs_seek(%u): seek error", offset);
    return 0;
}

int32_t pi_fs_copy(pi_fs_file_t *file, uint32_t index, void *buffer, uint32_t size,
                   int32_t ext2loc)
{
    emul_file_t *f = check_file(file, "pi_fs_copy");
    long pos;
    if (!ext2loc)
        fail("pi_fs_copy: writing (ext2loc 0) is not emulated (readfs is read-only)");
    if (index > f->pub.size || size > f->pub.size - index)
        fail("pi_fs_copy(index %lu, %lu bytes): beyond the end of the file (%u bytes)",
             (unsigned long)index, (unsigned long)size, f->pub.size);
    nn_emul_lock();
    nn_emul_check_l2_buffer(buffer, size, "pi_fs_copy");
    nn_emul_unlock();
    pos = ftell(f->fp);
    if (fseek(f->fp, (long)index, SEEK_SET) || fread(buffer, 1, size, f->fp) != size ||
        fseek(f->fp, pos, SEEK_SET))
        fail("pi_fs_copy: read error");
    return 0;
}

void pi_cl_fs_copy(pi_fs_file_t *file, uint32_t index, void *buffer, uint32_t size,
                   int32_t ext2loc, pi_cl_fs_req_t *req)
{
    emul_file_t *f;
    uint8_t *bytes;
    long pos;
    nn_emul_init();
    nn_emul_require_cluster("pi_cl_fs_copy");
    f = (emul_file_t *)file;
    if (!file || f->magic != FILE_MAGIC)
        fail("pi_cl_fs_copy: not an open file (pi_fs_open)");
    if (!req)
        fail("pi_cl_fs_copy: req is NULL");
    if (!ext2loc)
        fail("pi_cl_fs_copy: writing (ext2loc 0) is not emulated (readfs is read-only)");
    if (size == 0 || index > f->pub.size || size > f->pub.size - index)
        fail("pi_cl_fs_copy(index %lu, %lu bytes): empty or beyond the end of the file (%u bytes)",
             (unsigned long)index, (unsigned long)size, f->pub.size);
    bytes = (uint8_t *)malloc(size);
    if (!bytes)
        fail("pi_cl_fs_copy: out of host memory");
    nn_emul_lock();
    nn_emul_check_l2_buffer(buffer, size, "pi_cl_fs_copy");
    pos = ftell(f->fp);
    if (fseek(f->fp, (long)index, SEEK_SET) || fread(bytes, 1, size, f->fp) != size ||
        fseek(f->fp, pos, SEEK_SET))
        fail("pi_cl_fs_copy: read error");
    req->file = file;
    req->index = index;
    req->buffer = buffer;
    req->size = size;
    req->ext2loc = ext2loc;
    req->done = 0;
    req->emul_data = bytes;
    nn_emul_xfer_issue(NN_EMUL_XFER_RAM, "pi_cl_fs_copy", req, &req->id, (uint8_t *)buffer,
                       (uintptr_t)buffer, bytes, (uintptr_t)index, size, size, size, 1);
    nn_emul_unlock();
}

int32_t pi_cl_fs_wait(pi_cl_fs_req_t *req)
{
    nn_emul_init();
    nn_emul_require_cluster("pi_cl_fs_wait");
    nn_emul_lock();
    nn_emul_xfer_wait(NN_EMUL_XFER_RAM, "pi_cl_fs_wait", req);
    free(req->emul_data);
    req->emul_data = NULL;
    req->done = 1;
    nn_emul_unlock();
    return 0;
}
