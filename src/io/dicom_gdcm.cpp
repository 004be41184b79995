// The only C++ of lumen: decoding compressed pixel data with GDCM's codecs (docs/DICOM.md).
// The data set is never parsed by GDCM: the C pre-check (dicom_parse.c) has walked it and gives
// the image description; this file hands the fragments it found (in memory, so the file cannot
// change between check and decode) to the codec of the transfer syntax, set up from that
// description, and copies the decoded samples into the caller's buffer. Skipping GDCM's
// ImageReader skips its many header heuristics (spacing, overlays, icons, RT dose grids...),
// which assert() on unusual headers. No exception leaves this file.
#include <cstdio>
#include <cstring>
#include <new>

#include <gdcmDataElement.h>
#include <gdcmFragment.h>
#include <gdcmJPEG2000Codec.h>
#include <gdcmJPEGCodec.h>
#include <gdcmJPEGLSCodec.h>
#include <gdcmRLECodec.h>
#include <gdcmSequenceOfFragments.h>
#include <gdcmTrace.h>
#include <gdcmTransferSyntax.h>

#include <vector>

#include "io/dicom_frame_start.h"
#include "io/dicom_internal.h"

namespace {

int fail(char *msg, size_t msg_size, const char *text) {
  if (msg && msg_size) std::snprintf(msg, msg_size, "%s", text);
  return 1;
}

// The encapsulated pixel data as GDCM's sequence of fragments: the items after the basic offset
// table, up to the sequence delimiter (the pre-check has walked them; bounds checked again). A
// multi-frame image whose frames span several fragments is handed over as one fragment per frame
// (dicom_frame_start.h), the layout GDCM's codecs decode frame by frame.
bool fragments(const uint8_t *data, size_t size, size_t pos, const lumen_dicom_info &in, gdcm::SequenceOfFragments &sq) {
  bool first = true, group = in.frames > 1;
  auto add = [&](const char *bytes, size_t n) {
    gdcm::Fragment frag;
    frag.SetByteValue(bytes, (uint32_t)n);
    sq.AddFragment(frag);
  };
  // the current frame: its one fragment in place, or its fragments copied together (only when split)
  const uint8_t *one = nullptr;
  uint32_t one_len = 0;
  std::vector<char> joined;
  auto flush = [&]() {
    if (!joined.empty()) add(joined.data(), joined.size());
    else if (one) add(reinterpret_cast<const char *>(one), one_len);
    joined.clear();
    one = nullptr;
  };
  while (pos + 8 <= size) {
    uint32_t tag = (uint32_t)data[pos + 1] << 24 | (uint32_t)data[pos] << 16 | (uint32_t)data[pos + 3] << 8 |
                   data[pos + 2];
    uint32_t len = (uint32_t)data[pos + 4] | (uint32_t)data[pos + 5] << 8 | (uint32_t)data[pos + 6] << 16 |
                   (uint32_t)data[pos + 7] << 24;
    pos += 8;
    if (tag == 0xFFFEE0DDu) {
      flush();
      return !first;
    }
    if (tag != 0xFFFEE000u || len > size - pos) return false;
    int starts = group ? lumen_dicom_starts_frame(in.transfer_syntax, data + pos, len) : -1;
    if (!first && starts > 0) {  // a frame's first fragment
      flush();
      one = data + pos, one_len = len;
    } else if (!first && starts == 0 && one) {  // it continues: the frame's fragments concatenated
      if (joined.empty()) joined.assign(one, one + one_len);
      joined.insert(joined.end(), data + pos, data + pos + len);
    } else if (!first) {
      add(reinterpret_cast<const char *>(data + pos), len);
    }
    first = false;
    pos += len;
  }
  return false;
}

// One codec set up from the pre-checked header (as gdcm::Bitmap does), then Decode.
template <class Codec>
bool run_codec(Codec &codec, const lumen_dicom_info &in, const gdcm::DataElement &px, gdcm::DataElement &out) {
  unsigned int dims[3] = {(unsigned int)in.columns, (unsigned int)in.rows, (unsigned int)in.frames};
  codec.SetNumberOfDimensions(in.frames > 1 ? 3 : 2);
  codec.SetDimensions(dims);
  codec.SetPlanarConfiguration(0);
  codec.SetPhotometricInterpretation(std::strcmp(in.photometric, "MONOCHROME1") == 0
                                         ? gdcm::PhotometricInterpretation::MONOCHROME1
                                         : gdcm::PhotometricInterpretation::MONOCHROME2);
  codec.SetPixelFormat(gdcm::PixelFormat(1, (unsigned short)in.bits_allocated, (unsigned short)in.bits_stored,
                                         (unsigned short)in.high_bit, (unsigned short)in.pixel_representation));
  codec.SetNeedOverlayCleanup(false);
  return codec.Decode(px, out);
}

}  // namespace

/* The one symbol of the module liblumen_gdcm.so, found by dicom_gdcm_load.c with dlsym. */
extern "C" __attribute__((visibility("default"))) int lumen_gdcm_module_decode(const uint8_t *data, size_t size,
                                                                            const lumen_dicom_header *hdr, void *dst,
                                                                            size_t dst_bytes, char *msg,
                                                                            size_t msg_size) {
  try {
    gdcm::Trace::SetDebug(false);  // GDCM prints to stderr otherwise; lumen reports errors itself
    gdcm::Trace::SetWarning(false);
    gdcm::Trace::SetError(false);
    const lumen_dicom_info &in = hdr->info;
    gdcm::SmartPointer<gdcm::SequenceOfFragments> sq = new gdcm::SequenceOfFragments;
    if (!fragments(data, size, (size_t)hdr->pixel_offset, in, *sq)) return fail(msg, msg_size, "malformed fragments");
    gdcm::DataElement px(gdcm::Tag(0x7fe0, 0x0010));
    px.SetValue(*sq);
    px.SetVLToUndefined();  // (before any VR: GDCM asserts that only SQ/UN are undefined-length)
    px.SetVR(gdcm::VR::OB);
    gdcm::TransferSyntax ts = gdcm::TransferSyntax::GetTSType(in.transfer_syntax);
    gdcm::DataElement out;
    bool ok = false, known = true;
    unsigned int bits_after = (unsigned int)in.bits_allocated;
    if (gdcm::RLECodec rle; rle.CanDecode(ts)) {
      rle.SetBufferLength(dst_bytes);
      ok = run_codec(rle, in, px, out);
    } else if (gdcm::JPEGLSCodec jls; jls.CanDecode(ts)) {
      ok = run_codec(jls, in, px, out);
      bits_after = jls.GetPixelFormat().GetBitsAllocated();
    } else if (gdcm::JPEG2000Codec j2k; j2k.CanDecode(ts)) {
      ok = run_codec(j2k, in, px, out);
      bits_after = j2k.GetPixelFormat().GetBitsAllocated();
    } else if (gdcm::JPEGCodec jpeg; jpeg.CanDecode(ts)) {
      ok = run_codec(jpeg, in, px, out);
      bits_after = jpeg.GetPixelFormat().GetBitsAllocated();
    } else {
      known = false;
    }
    if (!known) return fail(msg, msg_size, "no GDCM codec for this transfer syntax");
    if (!ok) return fail(msg, msg_size, "the codec could not decode the pixel data");
    if (bits_after != (unsigned int)in.bits_allocated)
      return fail(msg, msg_size, "the codestream's bit depth differs from BitsAllocated");
    const gdcm::ByteValue *bv = out.GetByteValue();
    size_t got = bv ? (size_t)bv->GetLength() : 0;
    if (got < dst_bytes || got > dst_bytes + 1) {  // + 1: padding to an even length
      char text[160];
      std::snprintf(text, sizeof text, "the codec decoded %zu bytes, expected %zu (Rows x Columns x frames x "
                    "BitsAllocated / 8)", got, dst_bytes);
      return fail(msg, msg_size, text);
    }
    std::memcpy(dst, bv->GetPointer(), dst_bytes);
    return 0;
  } catch (const std::bad_alloc &) {
    return fail(msg, msg_size, "out of memory in GDCM");
  } catch (const std::exception &e) {
    char text[200];
    std::snprintf(text, sizeof text, "GDCM: %s", e.what());
    return fail(msg, msg_size, text);
  } catch (...) {
    return fail(msg, msg_size, "GDCM raised an unknown exception");
  }
}
