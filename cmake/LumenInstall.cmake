# Install rules for consumers of an installed lumen: a pkg-config file (lumen.pc) and a CMake
# package (find_package(lumen) -> lumen::lumen, the shared library, and lumen::lumen_static).
# Included from the top-level CMakeLists.txt after the targets exist:  include(LumenInstall)
# install.sh writes the same files itself when an older CMakeLists does not include this one.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Libraries a static link needs (the shared library carries them itself): these, and those of each
# part that is built: the variable that says so, then its flags.
set(_lumen_private "-lm -lpthread")
set(_lumen_private_parts
    CMAKE_DL_LIBS "-l${CMAKE_DL_LIBS}"
    LUMEN_HAVE_OPENMP "${OpenMP_C_FLAGS}"
    LUMEN_HAVE_GSL "-lgsl -lgslcblas"
    LUMEN_HAVE_CUDA "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt")
list(LENGTH _lumen_private_parts _lumen_n)
math(EXPR _lumen_last "${_lumen_n} - 1")
foreach(_lumen_i RANGE 0 ${_lumen_last} 2)
  math(EXPR _lumen_j "${_lumen_i} + 1")
  list(GET _lumen_private_parts ${_lumen_i} _lumen_built)
  list(GET _lumen_private_parts ${_lumen_j} _lumen_flags)
  if(${_lumen_built})
    string(APPEND _lumen_private " ${_lumen_flags}")
  endif()
endforeach()
string(REPLACE ";" " " _lumen_private "${_lumen_private}")

# Relocatable: the prefix is found from the .pc file's own folder (cmake --install --prefix works).
set(LUMEN_PC_CONTENT "prefix=\${pcfiledir}/../..
exec_prefix=\${prefix}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: lumen
Description: DCE-MRI and T1 fitting, image filters on CPU and CUDA
Version: ${PROJECT_VERSION}
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -llumen
Libs.private: ${_lumen_private}
")
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/lumen.pc CONTENT "${LUMEN_PC_CONTENT}")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lumen.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

set(LUMEN_CONFIG_CONTENT "# lumen CMake package: find_package(lumen) gives lumen::lumen (shared) and lumen::lumen_static.
get_filename_component(_lumen_prefix \"\${CMAKE_CURRENT_LIST_DIR}/../../..\" ABSOLUTE)
set(lumen_VERSION ${PROJECT_VERSION})
set(lumen_INCLUDE_DIRS \"\${_lumen_prefix}/${CMAKE_INSTALL_INCLUDEDIR}\")
set(lumen_CUDA ${LUMEN_HAVE_CUDA})
if(NOT TARGET lumen::lumen)
  add_library(lumen::lumen SHARED IMPORTED)
  set_target_properties(lumen::lumen PROPERTIES
    IMPORTED_LOCATION \"\${_lumen_prefix}/${CMAKE_INSTALL_LIBDIR}/liblumen.so\"
    INTERFACE_INCLUDE_DIRECTORIES \"\${lumen_INCLUDE_DIRS}\")
endif()
if(NOT TARGET lumen::lumen_static AND EXISTS \"\${_lumen_prefix}/${CMAKE_INSTALL_LIBDIR}/liblumen.a\")
  add_library(lumen::lumen_static STATIC IMPORTED)
  separate_arguments(_lumen_private UNIX_COMMAND \"${_lumen_private}\")
  set_target_properties(lumen::lumen_static PROPERTIES
    IMPORTED_LOCATION \"\${_lumen_prefix}/${CMAKE_INSTALL_LIBDIR}/liblumen.a\"
    INTERFACE_INCLUDE_DIRECTORIES \"\${lumen_INCLUDE_DIRS}\"
    INTERFACE_LINK_LIBRARIES \"\${_lumen_private}\")
endif()
set(lumen_LIBRARIES lumen::lumen)
set(lumen_FOUND TRUE)
")
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/lumenConfig.cmake CONTENT "${LUMEN_CONFIG_CONTENT}")
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/lumenConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/lumenConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/lumenConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/lumen)

# The MEX sources, the Python package and the binding docs, for install.sh and users.
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/matlab/ DESTINATION ${CMAKE_INSTALL_DATADIR}/lumen/matlab
  FILES_MATCHING PATTERN "*.c" PATTERN "*.m" PATTERN "*.sh")
