// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Reading a persisted object table image.
 *
 * The image comes from a file: every field is checked before use, from the
 * outside in (head, then each record on demand), and each failed check has
 * its own message.  A damaged record costs the frames that name its slot,
 * nothing else.
 */
#include <errno.h>
#include <string.h>

#include "capture/objtab.h"
#include "relstack/relstack.h"

int rs_objtab_image_check(const void *mem, size_t size, const char **why)
{
	const struct rs_objtab_image_head *h = mem;

	*why = NULL;
	if (size < sizeof(*h))
		*why = "object table: shorter than its head";
	else if (memcmp(h->magic, RS_OBJTAB_IMAGE_MAGIC, sizeof(h->magic)) != 0)
		*why = "object table: bad magic";
	else if (h->head_hash != rs_hash32(RS_HASH32_INIT, h, offsetof(struct rs_objtab_image_head, head_hash)))
		*why = "object table: head checksum mismatch";
	else if (h->version != RS_OBJTAB_IMAGE_VERSION)
		*why = "object table: unsupported version";
	else if (h->record_size != sizeof(struct rs_objtab_record))
		*why = "object table: unexpected record size";
	else if (h->capacity < 1 || h->capacity > 65536)
		*why = "object table: capacity out of range";
	else if (size < rs_objtab_image_size(h->capacity))
		*why = "object table: records extend beyond the area";
	else if (h->flags & ~RS_IMAGE_ADDRESSES)
		*why = "object table: unknown flags";
	return *why ? -RELSTACK_ECORRUPT : 0;
}

int rs_objtab_image_record(const void *mem, size_t size, uint32_t slot, struct relstack_object *out,
			   uint64_t *load_address, const char **why)
{
	const struct rs_objtab_image_head *h = mem;
	const struct rs_objtab_record *r;
	struct rs_objtab_record copy;

	*why = NULL;
	if (slot >= h->capacity)
		return -ERANGE;
	r = (const struct rs_objtab_record *)((const char *)mem + sizeof(*h)) + slot;
	/* One copy: the checks and the result see the same bytes. */
	memcpy(&copy, r, sizeof(copy));
	if (copy.seq & 1)
		*why = "object record: writer stopped while updating it";
	else if (copy.hash != rs_hash32(RS_HASH32_INIT, &copy.slot,
					sizeof(copy) - offsetof(struct rs_objtab_record, slot)))
		*why = "object record: checksum mismatch";
	else if (copy.slot != slot)
		*why = "object record: slot number does not match its position";
	else if (copy.state > RELSTACK_OBJECT_UNLOADED)
		*why = "object record: unknown state";
	else if (copy.base > RELSTACK_BASE_STEXT)
		*why = "object record: unknown base convention";
	else if (copy.build_id_len > RELSTACK_BUILD_ID_MAX)
		*why = "object record: build-id longer than its field";
	else if (memchr(copy.path, '\0', sizeof(copy.path)) == NULL)
		*why = "object record: path not terminated";
	else if (copy.text_vaddr + copy.text_size < copy.text_vaddr)
		*why = "object record: text range wraps";
	if (*why)
		return -RELSTACK_ECORRUPT;
	if (copy.state == RELSTACK_OBJECT_EMPTY)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->slot = slot;
	out->state = copy.state;
	out->base = copy.base;
	out->flags = copy.flags;
	memcpy(out->path, copy.path, sizeof(out->path));
	memcpy(out->build_id, copy.build_id, copy.build_id_len);
	out->build_id_len = copy.build_id_len;
	out->text_vaddr = copy.text_vaddr;
	out->text_offset = copy.text_offset;
	out->text_size = copy.text_size;
	out->load_epoch = copy.load_epoch;
	out->unload_epoch = copy.unload_epoch;
	if (load_address)
		*load_address = (h->flags & RS_IMAGE_ADDRESSES) ? copy.load_address : 0;
	return 0;
}

void rs_objtab_image_check_entry(const void *mem, size_t size, uint64_t epoch, struct relstack_entry *e)
{
	struct relstack_object o;
	const char *why;
	int ret;

	if (e->kind != RELSTACK_ENTRY_OBJECT)
		return;
	ret = rs_objtab_image_record(mem, size, e->slot, &o, NULL, &why);
	if (ret == 0 && epoch && (epoch < o.load_epoch || (o.unload_epoch && epoch >= o.unload_epoch)))
		e->reason = RELSTACK_REASON_SLOT_REUSED;
	else if (ret == 0 && (e->offset < o.text_vaddr || e->offset - o.text_vaddr >= o.text_size))
		e->reason = RELSTACK_REASON_BEYOND_OBJECT;
	else if (ret == -ENOENT || ret == -ERANGE)
		e->reason = RELSTACK_REASON_EMPTY_SLOT;
	else if (ret < 0)
		e->reason = RELSTACK_REASON_BAD_SLOT_RECORD;
	else
		return;
	e->kind = RELSTACK_ENTRY_INVALID;
}
