/* SPDX-License-Identifier: MIT */
/* libwlshared.so: the shared-library half of the wl_sharedlib workload. */
#ifndef WLSHARED_H
#define WLSHARED_H

unsigned wl_shared_entry(unsigned x);

#endif /* WLSHARED_H */
