/* SPDX-License-Identifier: MIT */
/* Internal interfaces of src/format: the definitions store and the record decoder. */
#ifndef SP_FORMAT_INTERNAL_H
#define SP_FORMAT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/spool.h>

#include "arena.h"
#include "mem.h"
#include "vec.h"

/*
 * Layering inside src/format:
 *
 *   writer.c, sink_*.c            encode (SPULSE3 §7)
 *   decode.c                      one record at a time -> struct sp__event,
 *                                 applying definitions to struct sp_spool
 *   spool.c, resolve.c            the public read-only view (§6 resolution)
 *   unzstd.c                      incremental zstd decompression
 *   snapshot.c replay.c tail.c    the three readers
 *
 * struct sp_spool is the store every reader keeps: all modules, frames
 * (with the resolution context of §6), stack nodes and threads decoded so
 * far. Definitions are appended only after their record decoded and
 * validated completely, so a cut-off or corrupt record changes nothing.
 */

/* SPULSE3 record tags (§4). */
enum sp__tag {
	SP_TAG_MODULE = 1,
	SP_TAG_FRAME = 2,
	SP_TAG_STACK = 3,
	SP_TAG_THREAD = 4,
	SP_TAG_SAMPLE = 5,
	SP_TAG_PYTHON = 6,
	SP_TAG_DEACTIVATE_PROCESS = 7,
	SP_TAG_DEACTIVATE_MODULE = 8,
};

extern const uint8_t sp__spool_magic[SP_SPOOL_MAGIC_SIZE];

/* zstd frame magic (little-endian 0xFD2FB528): a compressed spool. */
bool sp__is_zstd(const void *data, size_t len);

/* A stored frame: the public view plus its §6 resolution context. */
struct sp__frame {
	uint64_t abs_ip;
	uint64_t rel_ip;
	uint32_t module;       /* pinned module or SP_NO_MODULE */
	uint32_t module_limit; /* modules decoded before this frame */
	uint32_t mode;	       /* enum sp_frame_mode */
	uint32_t pad;
};

struct sp_spool {
	struct sp__mem mem;
	struct sp__arena arena; /* module paths */
	uint64_t start_us;
	uint64_t interval_us;
	struct sp__vec modules; /* struct sp_module, path in arena */
	struct sp__vec frames;	/* struct sp__frame */
	struct sp__vec stacks;	/* struct sp_stack_node */
	struct sp__vec threads; /* struct sp_thread */
	struct sp__vec python;	/* struct sp_python_record, if keep_python */
	/* uint32_t: the frame count at each of them (their generation) */
	struct sp__vec python_at;
	struct sp__vec retired; /* uint32_t module ids retired by the last
				   tag 7/8 record decoded */
	/*
	 * uint64_t per frame: the timestamp of the first sample after its
	 * record, i.e. of the sample that made the writer define it (SPULSE3
	 * §7: frames go out right before the sample using them). JIT names
	 * are looked up at that time (src/sym/sym_jit.c). Frames no sample
	 * followed, or a failed growth, have none (sp__spool_frame_ns 0).
	 */
	struct sp__vec frame_ns;
	bool frame_ns_failed; /* a growth failed: no later frame gets one */
	uint64_t retirements; /* modules retired so far (tag 7 and 8) */
	bool keep_python;
	bool have_first;
	uint64_t first_ns; /* first sample in file order (§8) */
};

void sp__spool_init(struct sp_spool *spool, const struct sp__mem *mem,
		    bool keep_python);
void sp__spool_fini(struct sp_spool *spool);

/*
 * A cursor over decoded spool bytes: buf[0..len) is all that is available,
 * and its end is treated as the end of the file (§9.2 classifies a failed
 * varint with fewer than 10 bytes before it as cut off). @offset is the
 * stream offset of buf[0], for diagnostics. @last_ns is the sample
 * baseline of §5.5, advanced only by complete sample records. @more is
 * how many stream bytes are known to exist past buf[len) without being
 * in the buffer (a windowed reader: the rest of the file); it only
 * decides whether a module path longer than SP_SPOOL_PATH_MAX is cut off
 * (it ends past the end of the stream) or corrupt, so that no reader has
 * to hold such a path to know.
 */
struct sp__cursor {
	const uint8_t *buf;
	size_t len;
	size_t pos;
	uint64_t offset;
	uint64_t last_ns;
	uint64_t more;
};

/* A sample as stored: pid and tid live in the thread table. */
struct sp__sample_rec {
	uint64_t timestamp_ns;
	uint32_t thread;
	uint32_t stack;
};

/* What one decoded record was. */
struct sp__event {
	uint8_t tag;
	union {
		struct sp_sample sample;	/* SP_TAG_SAMPLE */
		struct sp_python_record python; /* SP_TAG_PYTHON */
		int32_t pid; /* SP_TAG_DEACTIVATE_PROCESS, SP_TAG_MODULE */
		uint32_t module_id; /* SP_TAG_DEACTIVATE_MODULE */
	} u;
	uint32_t id; /* id defined by tags 1-4 */
};

/*
 * Parses the header at buf[0..len). Returns the header length (> 0),
 * SP_ETRUNCATED when @len is too short to hold it (more bytes may follow)
 * or SP_ECORRUPT (bad magic, overflowing varint).
 */
int sp__spool_header(const uint8_t *buf, size_t len, uint64_t *start_us,
		     uint64_t *interval_us, struct sp_diag *diag);

enum sp__decode_mode {
	/* Validate every check of §9.1 and append definitions to the spool. */
	SP_DECODE_APPLY = 0,
	/*
	 * The bytes were validated by an earlier APPLY pass over the same
	 * spool (Replay iteration): skip definition records, decode samples
	 * against the retained definitions.
	 */
	SP_DECODE_SAMPLES_ONLY = 1,
};

/*
 * Decodes the record at cur->pos. On success advances cur->pos past it,
 * applies it (APPLY mode) and fills @ev; returns 0.
 * Returns SP_ETRUNCATED if the record runs past cur->len (nothing
 * consumed or applied), SP_ECORRUPT on any failed check (message and
 * offset in @diag when non-NULL), -ENOMEM if a definition could not be
 * stored (nothing applied).
 */
int sp__spool_decode(struct sp_spool *spool, struct sp__cursor *cur,
		     enum sp__decode_mode mode, struct sp__event *ev,
		     struct sp_diag *diag);

/*
 * Decodes a run of consecutive, well-formed sample records at cur->pos
 * into @out (at most @cap), advancing the cursor and its baseline. Stops
 * at the first record that is not a sample, lies within 31 bytes of the
 * end, or fails a check; sp__spool_decode() then handles that record (and
 * reports its exact error). Returns the number decoded. The spool's
 * first-sample anchor is not updated here.
 */
size_t sp__spool_decode_samples(const struct sp_spool *spool,
				struct sp__cursor *cur,
				struct sp__sample_rec *out, size_t cap);

/* Gives the frames defined since the last sample the time @ts. */
void sp__spool_stamp_frames(struct sp_spool *spool, uint64_t ts);

/*
 * Records the first sample timestamp for §8 (first sample in file order)
 * and stamps the frames defined before this sample. Readers call it for
 * each sample in file order, or once per run of samples with the first
 * one's time.
 */
static inline void sp__spool_note_sample(struct sp_spool *spool, uint64_t ts)
{
	if (!spool->have_first) {
		spool->have_first = true;
		spool->first_ns = ts;
	}
	if (spool->frame_ns.len < spool->frames.len && !spool->frame_ns_failed)
		sp__spool_stamp_frames(spool, ts);
}

/* The time of frame @id (see struct sp_spool.frame_ns), 0 when unknown. */
static inline uint64_t sp__spool_frame_ns(const struct sp_spool *spool,
					  uint32_t id)
{
	return id < spool->frame_ns.len ?
		       ((const uint64_t *)spool->frame_ns.data)[id] :
		       0;
}

/*
 * Incremental zstd decompression (unzstd.c). A compressed spool is a
 * sequence of zstd frames (one per flushed chunk); the last one may be
 * unfinished when the writer is still running or crashed, which is not an
 * error: everything decodable so far is produced.
 */
struct sp__unzstd;

int sp__unzstd_new(const struct sp__mem *mem, struct sp__unzstd **out);
void sp__unzstd_free(struct sp__unzstd *z);
/* Forgets all state, ready for a new stream from its first byte. */
void sp__unzstd_reset(struct sp__unzstd *z);
/*
 * Feeds @len compressed bytes and appends every byte they decode to @out
 * (a vec of uint8_t). Returns 0, SP_EZSTD (corrupt stream), -ENOMEM.
 * On failure @out may hold part of this call's output.
 */
int sp__unzstd_feed(struct sp__unzstd *z, const void *in, size_t len,
		    struct sp__vec *out);
/*
 * Like feed, but stops once @out holds at least @want bytes, returning the
 * number of input bytes consumed (>= 0). Lets a reader decode through a
 * bounded window.
 */
int sp__unzstd_feed_some(struct sp__unzstd *z, const void *in, size_t len,
			 struct sp__vec *out, size_t want);
/*
 * Like feed_some, but the decoded bytes go to @scratch (@cap bytes, reused)
 * and are only counted in *@skipped, until it reaches @want. Lets a reader
 * learn how long the stream is past a record it will never decode (an
 * oversized module path) without holding those bytes.
 */
int sp__unzstd_skip(struct sp__unzstd *z, const void *in, size_t len,
		    void *scratch, size_t cap, uint64_t want,
		    uint64_t *skipped);
/* Whether the input fed so far ends inside a zstd frame (cut off). */
bool sp__unzstd_mid_frame(const struct sp__unzstd *z);
/*
 * Decompresses a whole buffer into @out; *@cut (may be NULL) tells whether
 * it ends inside a frame. Returns 0, SP_EZSTD, -ENOMEM. Unbounded: for
 * tests and fuzz oracles, never for a reader.
 */
int sp__unzstd_all(const struct sp__mem *mem, const void *in, size_t len,
		   struct sp__vec *out, bool *cut);

#endif /* SP_FORMAT_INTERNAL_H */
