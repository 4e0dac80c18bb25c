/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Does an object keep frame pointers?  Decided once per object when the
 * object table first sees it (never on the capture path).
 */
#ifndef RELSTACK_FPCHECK_H
#define RELSTACK_FPCHECK_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

#include "relstack-local.h"

/*
 * @info is the object as dl_iterate_phdr reports it; [text_start, text_end)
 * its executable span in this process.  Returns false only when the object
 * is known not to keep frame pointers.
 */
RS_HIDDEN bool rs_fp_object_keeps_fp(const struct dl_phdr_info *info, uintptr_t text_start,
				     uintptr_t text_end);

#endif
