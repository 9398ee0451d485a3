// Element types and reduction operations of ringmend's collectives (part of the
// bottom layer, core/: every folder uses them; the public API re-exports them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ringmend/core/half.hpp"

namespace ringmend {

// Float16 and BFloat16 (half.hpp) are reduced in float32: each combination
// of two or more inputs is computed in float32 and rounded once.
enum class DataType : std::uint8_t {
  Float32 = 0,
  Float64 = 1,
  Int32 = 2,
  Int64 = 3,
  Float16 = 4,
  BFloat16 = 5
};
enum class ReduceOp : std::uint8_t { Sum = 0, Prod = 1, Min = 2, Max = 3 };

inline constexpr int kDataTypeCount = 6;
inline constexpr int kReduceOpCount = 4;

constexpr bool is_valid(DataType t) { return static_cast<int>(t) < kDataTypeCount; }
constexpr bool is_valid(ReduceOp o) { return static_cast<int>(o) < kReduceOpCount; }

constexpr std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::Float32:
      return 4;
    case DataType::Float64:
      return 8;
    case DataType::Int32:
      return 4;
    case DataType::Int64:
      return 8;
    case DataType::Float16:
    case DataType::BFloat16:
      return 2;
  }
  return 0;
}

constexpr std::string_view name_of(DataType t) {
  switch (t) {
    case DataType::Float32:
      return "float32";
    case DataType::Float64:
      return "float64";
    case DataType::Int32:
      return "int32";
    case DataType::Int64:
      return "int64";
    case DataType::Float16:
      return "float16";
    case DataType::BFloat16:
      return "bfloat16";
  }
  return "invalid-type";
}

constexpr std::string_view name_of(ReduceOp o) {
  switch (o) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Prod:
      return "prod";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "invalid-op";
}

template <class T>
struct DataTypeOf;
template <>
struct DataTypeOf<float> {
  static constexpr DataType value = DataType::Float32;
};
template <>
struct DataTypeOf<double> {
  static constexpr DataType value = DataType::Float64;
};
template <>
struct DataTypeOf<std::int32_t> {
  static constexpr DataType value = DataType::Int32;
};
template <>
struct DataTypeOf<std::int64_t> {
  static constexpr DataType value = DataType::Int64;
};

template <>
struct DataTypeOf<float16> {
  static constexpr DataType value = DataType::Float16;
};
template <>
struct DataTypeOf<bfloat16> {
  static constexpr DataType value = DataType::BFloat16;
};

template <class T>
inline constexpr DataType data_type_of = DataTypeOf<T>::value;

}  // namespace ringmend
