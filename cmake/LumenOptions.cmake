# Compiler flags, sanitizers and detection of optional parts (CUDA, OpenMP, GSL, I/O libraries).
include(CheckLanguage)

# ---- CUDA: on when nvcc is found and LUMEN_CUDA is not OFF
set(LUMEN_HAVE_CUDA OFF)
if(LUMEN_CUDA)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "75;80;90" CACHE STRING "CUDA architectures")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(LUMEN_HAVE_CUDA ON)
  else()
    message(STATUS "lumen: nvcc not found, building without the CUDA tier")
  endif()
endif()

# ---- OpenMP
set(LUMEN_HAVE_OPENMP OFF)
if(LUMEN_OPENMP)
  find_package(OpenMP COMPONENTS C)
  if(OpenMP_C_FOUND)
    set(LUMEN_HAVE_OPENMP ON)
  endif()
endif()

# ---- MPI (Open MPI): on when found and LUMEN_MPI is not OFF; only lumen_dist links it
set(LUMEN_HAVE_MPI OFF)
if(LUMEN_MPI)
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(LUMEN_HAVE_MPI ON)
  else()
    message(STATUS "lumen: MPI not found (libopenmpi-dev), building without it")
  endif()
endif()

# ---- GSL (standard solver); optional so the core builds where no -dev package exists
find_path(GSL_INCLUDE_DIR gsl/gsl_multifit_nlinear.h)
find_library(GSL_LIBRARY gsl)
find_library(GSL_CBLAS_LIBRARY gslcblas)
if(GSL_INCLUDE_DIR AND GSL_LIBRARY AND GSL_CBLAS_LIBRARY)
  set(LUMEN_HAVE_GSL ON)
else()
  set(LUMEN_HAVE_GSL OFF)
endif()

# ---- I/O: nifti_clib and cJSON. Debian's NIFTIConfig.cmake points at a wrong library path,
# so find the pieces directly.
set(LUMEN_HAVE_IO OFF)
if(LUMEN_IO)
  find_path(NIFTI_INCLUDE_DIR nifti2_io.h PATH_SUFFIXES nifti)
  find_library(NIFTI2_LIBRARY nifti2)
  find_library(ZNZ_LIBRARY znz)
  find_path(CJSON_INCLUDE_DIR cJSON.h PATH_SUFFIXES cjson)
  find_library(CJSON_LIBRARY cjson)
  find_package(ZLIB)
  find_package(PNG)   # optional inside lumen_io: without it the PNG calls return LUMEN_ERR_NOT_BUILT
  set(LUMEN_HAVE_PNG ${PNG_FOUND})
  # xxHash (libxxhash-dev): the pipelines' input and output checksums (XXH3 64-bit)
  find_path(XXHASH_INCLUDE_DIR xxhash.h)
  find_library(XXHASH_LIBRARY xxhash)
  # GDCM (libgdcm-dev) for DICOM input; Debian ships GDCMConfig.cmake. Optional: without it
  # lumen_dicom_read returns LUMEN_ERR_NOT_BUILT.
  set(LUMEN_HAVE_DICOM OFF)
  if(LUMEN_DICOM)
    find_package(GDCM CONFIG QUIET)
    if(GDCM_FOUND AND TARGET gdcmMSFF)
      set(LUMEN_HAVE_DICOM ON)
    else()
      message(STATUS "lumen: GDCM not found (libgdcm-dev), building without DICOM input")
    endif()
  endif()
  if(NIFTI_INCLUDE_DIR AND NIFTI2_LIBRARY AND ZNZ_LIBRARY AND CJSON_INCLUDE_DIR AND CJSON_LIBRARY AND ZLIB_FOUND
     AND XXHASH_INCLUDE_DIR AND XXHASH_LIBRARY)
    set(LUMEN_HAVE_IO ON)
  else()
    message(STATUS "lumen: nifti_clib/cJSON/zlib/xxHash not found, building without NIfTI I/O")
  endif()
endif()

# ---- sanitizers apply to every target, C and the host side of CUDA
if(LUMEN_SANITIZE)
  set(LUMEN_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  foreach(flag ${LUMEN_SAN_FLAGS})
    add_compile_options($<$<COMPILE_LANGUAGE:C>:${flag}>)
  endforeach()
  add_link_options(${LUMEN_SAN_FLAGS})
endif()

function(lumen_target_flags target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unknown-pragmas>
    $<$<AND:$<COMPILE_LANGUAGE:C>,$<BOOL:${LUMEN_WERROR}>>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${LUMEN_WERROR}>>:-Werror=all-warnings>)
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L)
  if(LUMEN_HAVE_GSL)
    target_include_directories(${target} PRIVATE ${GSL_INCLUDE_DIR})
  endif()
  if(LUMEN_HAVE_OPENMP)
    target_link_libraries(${target} PRIVATE OpenMP::OpenMP_C)
  endif()
endfunction()

# Libraries the core needs at link time (static and shared variants alike).
function(lumen_link_deps target)
  find_package(Threads REQUIRED)
  target_link_libraries(${target} PUBLIC Threads::Threads m ${CMAKE_DL_LIBS})
  if(LUMEN_HAVE_OPENMP)
    target_link_libraries(${target} PUBLIC OpenMP::OpenMP_C)
  endif()
  if(LUMEN_HAVE_GSL)
    target_link_libraries(${target} PUBLIC ${GSL_LIBRARY} ${GSL_CBLAS_LIBRARY})
  endif()
  if(LUMEN_HAVE_CUDA)
    # static runtime: a machine without a driver still loads lumen and gets a clear reason
    target_link_libraries(${target} PUBLIC CUDA::cudart_static)
  endif()
endfunction()
