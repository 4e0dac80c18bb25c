// SPDX-License-Identifier: LGPL-2.1-or-later
/* The one place that turns relstack's error codes into strings. */
#include <string.h>

#include "relstack/relstack.h"

const char *relstack_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case RELSTACK_EFORMAT: return "malformed format descriptor";
	case RELSTACK_ECORRUPT: return "corrupt data";
	case RELSTACK_EVERSION: return "unsupported format version";
	case RELSTACK_EMAGIC: return "not a relstack file";
	case RELSTACK_EBUILDID: return "build-id mismatch";
	case RELSTACK_ENOSYMBOLS: return "no symbols found";
	case RELSTACK_ETRUNCATED: return "file truncated";
	}
	return strerror(err);
}
