// Host-side summary encoders: scalar, histogram (TF's default buckets), image (PNG),
// text and tensor.
#include <zlib.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "loom/train/summary_proto.h"

namespace loom::train {
namespace {

void SetPlugin(proto::Summary::Value* v, const std::string& plugin) {
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name(plugin);
}

std::vector<double> ToDoubles(const Tensor& t, const std::string& what) {
  std::vector<double> out(t.NumElements());
  if (t.dtype() == kBool) {
    const bool* p = t.data<bool>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i] ? 1 : 0;
    return out;
  }
  SwitchNumeric(t.dtype(), what, [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
    return 0;
  });
  return out;
}

void AppendBigEndian32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

void AppendChunk(std::string& out, const char type[4], const std::string& data) {
  AppendBigEndian32(out, static_cast<uint32_t>(data.size()));
  const size_t type_at = out.size();
  out.append(type, 4);
  out += data;
  // The chunk CRC covers the type and the data (zlib's CRC-32, as PNG specifies).
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + type_at), 4 + data.size());
  AppendBigEndian32(out, static_cast<uint32_t>(crc));
}

}  // namespace

const std::vector<double>& DefaultHistogramBucketLimits() {
  static const std::vector<double> limits = [] {
    std::vector<double> pos, neg;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) {  // 10% wider each, as TF
      pos.push_back(v);
      neg.push_back(-v);
    }
    pos.push_back(DBL_MAX);
    neg.push_back(-DBL_MAX);
    std::reverse(neg.begin(), neg.end());
    std::vector<double> all = neg;
    all.push_back(0.0);
    all.insert(all.end(), pos.begin(), pos.end());
    return all;
  }();
  return limits;
}

proto::HistogramProto HistogramFromValues(const std::vector<double>& values,
                                          const std::string& tag) {
  const std::vector<double>& limits = DefaultHistogramBucketLimits();
  std::vector<double> counts(limits.size(), 0.0);
  double min = DBL_MAX, max = -DBL_MAX, sum = 0, sum_squares = 0;
  for (double v : values) {
    if (!std::isfinite(v)) {
      throw InvalidArgument("Nan in summary histogram for: ", tag,
                            " (histograms need finite values)");
    }
    // Bucket i holds [limits[i-1], limits[i]).
    const size_t b = std::upper_bound(limits.begin(), limits.end(), v) - limits.begin();
    counts[std::min(b, counts.size() - 1)] += 1;
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
    sum_squares += v * v;
  }
  proto::HistogramProto h;
  h.set_min(min);
  h.set_max(max);
  h.set_num(static_cast<double>(values.size()));
  h.set_sum(sum);
  h.set_sum_squares(sum_squares);
  for (size_t i = 0; i < counts.size();) {
    double end = limits[i];
    double count = counts[i];
    ++i;
    if (count <= 0) {  // a run of empty buckets becomes one, ending at the run's end
      while (i < counts.size() && counts[i] <= 0) {
        end = limits[i];
        count = counts[i];
        ++i;
      }
    }
    h.add_bucket_limit(end);
    h.add_bucket(count);
  }
  if (h.bucket_size() == 0) {
    h.add_bucket_limit(DBL_MAX);
    h.add_bucket(0);
  }
  return h;
}

proto::Summary ScalarSummaryProto(const std::string& tag, double value) {
  proto::Summary s;
  auto* v = s.add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return s;
}

proto::Summary HistogramSummaryProto(const std::string& tag, const Tensor& values) {
  proto::Summary s;
  auto* v = s.add_value();
  v->set_tag(tag);
  *v->mutable_histo() = HistogramFromValues(ToDoubles(values, "HistogramSummary"), tag);
  return s;
}

std::string EncodePng(const uint8_t* pixels, int width, int height, int channels) {
  LOOM_CHECK(channels >= 1 && channels <= 4) << "EncodePng: " << channels << " channels";
  static constexpr int kColorType[] = {0, 0, 4, 2, 6};  // gray, gray+alpha, RGB, RGBA
  std::string out("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  AppendBigEndian32(ihdr, width);
  AppendBigEndian32(ihdr, height);
  ihdr += static_cast<char>(8);  // bit depth
  ihdr += static_cast<char>(kColorType[channels]);
  ihdr += std::string(3, '\0');  // compression, filter, interlace
  AppendChunk(out, "IHDR", ihdr);
  // Each scanline: filter byte 0 (None), then the row.
  const size_t row = static_cast<size_t>(width) * channels;
  std::string raw;
  raw.reserve((row + 1) * height);
  for (int y = 0; y < height; ++y) {
    raw += '\0';
    raw.append(reinterpret_cast<const char*>(pixels) + y * row, row);
  }
  uLongf compressed_size = compressBound(raw.size());
  std::string compressed(compressed_size, '\0');
  const int rc =
      compress2(reinterpret_cast<Bytef*>(compressed.data()), &compressed_size,
                reinterpret_cast<const Bytef*>(raw.data()), raw.size(), Z_DEFAULT_COMPRESSION);
  LOOM_CHECK_EQ(rc, Z_OK) << "zlib compress2 failed";
  compressed.resize(compressed_size);
  AppendChunk(out, "IDAT", compressed);
  AppendChunk(out, "IEND", "");
  return out;
}

proto::Summary ImageSummaryProto(const std::string& tag, const Tensor& images, int max_images) {
  if (images.rank() != 4 || (images.dim(3) != 1 && images.dim(3) != 3 && images.dim(3) != 4)) {
    throw InvalidArgument("ImageSummary '", tag, "': images must be [batch, height, width, ",
                          "channels] with 1, 3 or 4 channels, got ", images.shape());
  }
  if (images.dtype() != kUInt8 && !IsFloating(images.dtype())) {
    throw InvalidArgument("ImageSummary '", tag, "': images must be uint8 or float, got ",
                          DTypeName(images.dtype()));
  }
  const int64_t n = std::min<int64_t>(images.dim(0), max_images);
  const int h = static_cast<int>(images.dim(1)), w = static_cast<int>(images.dim(2));
  const int c = static_cast<int>(images.dim(3));
  const int64_t per_image = static_cast<int64_t>(h) * w * c;
  proto::Summary s;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<uint8_t> pixels(per_image);
    if (images.dtype() == kUInt8) {
      std::memcpy(pixels.data(), images.data<uint8_t>() + i * per_image, per_image);
    } else {
      const Tensor one = images.SubTensor(i);
      std::vector<double> v = ToDoubles(one, "ImageSummary");
      double lo = DBL_MAX, hi = -DBL_MAX;
      for (double x : v) {
        if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
      }
      double scale, offset;
      if (lo < 0) {  // symmetric around 128
        const double m = std::max(std::abs(lo), std::abs(hi));
        scale = m < 1e-6 ? 0 : 127.0 / m;
        offset = 128;
      } else {
        scale = hi < 1e-6 ? 0 : 255.0 / hi;
        offset = 0;
      }
      static constexpr uint8_t kBadColor[] = {255, 0, 0, 255};  // red, opaque
      for (int64_t p = 0; p < h * w; ++p) {
        bool finite = true;
        for (int k = 0; k < c; ++k) finite = finite && std::isfinite(v[p * c + k]);
        for (int k = 0; k < c; ++k) {
          pixels[p * c + k] = finite ? static_cast<uint8_t>(v[p * c + k] * scale + offset)
                                     : (c == 1 ? 255 : kBadColor[k]);
        }
      }
    }
    auto* v = s.add_value();
    v->set_tag(max_images > 1 ? StrCat(tag, "/image/", i) : StrCat(tag, "/image"));
    auto* image = v->mutable_image();
    image->set_height(h);
    image->set_width(w);
    image->set_colorspace(c);
    image->set_encoded_image_string(EncodePng(pixels.data(), w, h, c));
  }
  return s;
}

void TensorToProto(const Tensor& t, proto::TensorProto* out) {
  out->set_dtype(static_cast<proto::DataType>(t.dtype()));
  for (int64_t d : t.shape().dims()) out->mutable_tensor_shape()->add_dim()->set_size(d);
  if (t.dtype() == kString) {
    for (const std::string& s : t.flat<std::string>()) out->add_string_val(s);
  } else {
    out->set_tensor_content(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
}

proto::Summary TensorSummaryProto(const std::string& tag, const Tensor& tensor,
                                  const std::string& plugin_name) {
  proto::Summary s;
  auto* v = s.add_value();
  v->set_tag(tag);
  SetPlugin(v, plugin_name);
  TensorToProto(tensor, v->mutable_tensor());
  return s;
}

proto::Summary TextSummaryProto(const std::string& tag, const Tensor& text) {
  if (text.dtype() != kString) {
    throw InvalidArgument("TextSummary '", tag, "': expected a string tensor, got ",
                          DTypeName(text.dtype()));
  }
  return TensorSummaryProto(tag, text, "text");
}

}  // namespace loom::train
