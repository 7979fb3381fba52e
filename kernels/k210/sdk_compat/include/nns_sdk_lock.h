/* nnscons K210 SDK compatibility layer: force-included (-include) into the SDK's
 * lib/drivers/iomem.c only.
 *
 * iomem.c uses the lock API of Kendryte's patched newlib (<sys/lock.h>: `_lock_t`,
 * `_lock_acquire_recursive`, `_lock_release_recursive`); picolibc's <sys/lock.h> has the
 * upstream `__retarget_lock_*` API instead. The functions themselves are the SDK's
 * (lib/bsp/locks.c, which defines `_lock_t` as long, as declared here). */
#ifndef NNS_K210_COMPAT_SDK_LOCK_H
#define NNS_K210_COMPAT_SDK_LOCK_H

typedef long _lock_t;
void _lock_acquire_recursive(_lock_t *lock);
void _lock_release_recursive(_lock_t *lock);

#endif
