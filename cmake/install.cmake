# What `cmake --install` puts under the prefix (docs/install.md):
#   include/harness/...                     the public headers (include/harness), nothing else
#   lib/libharness_<module>.a               one static library per module, and the two journal
#                                           backends (harness_journal_sqlite, _postgres)
#   lib/cmake/harness/harnessConfig*.cmake  the package: find_package(harness) gives the targets
#                                           harness::<module> and harness::harness (all of them)
#   lib/pkgconfig/harness.pc                the same libraries for pkg-config
#   bin/harness                             the CLI
#   share/doc/harness/LICENSE, NOTICE       the licence (Apache-2.0) and the third-party notices
include(CMakePackageConfigHelpers)

# harness::harness: every library, for a program that does not want to choose.
add_library(harness_all INTERFACE)
target_link_libraries(harness_all INTERFACE ${HARNESS_LIBS})
harness_export_name(harness_all harness)

set(harness_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/harness)
install(TARGETS ${HARNESS_LIBS} harness_all EXPORT harnessTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/harness DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS harness RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/NOTICE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(EXPORT harnessTargets NAMESPACE harness:: DESTINATION ${harness_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/harnessConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/harnessConfig.cmake
                              INSTALL_DESTINATION ${harness_cmake_dir})
# 0.y.z: a minor version may break the API (semantic versioning before 1.0), so a request for
# 0.9 accepts 0.9.z only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/harnessConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/harnessConfig.cmake
              ${PROJECT_BINARY_DIR}/harnessConfigVersion.cmake
        DESTINATION ${harness_cmake_dir})

# The pkg-config file lists the libraries in link order (HARNESS_LIBS: dependents first) and
# finds its prefix from where it is installed, so an installed tree can be moved.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(harness_pc_prefix "${CMAKE_INSTALL_PREFIX}")
else()
  # One ".." for each directory between the prefix and lib/pkgconfig.
  set(harness_pc_prefix "\${pcfiledir}")
  string(REPLACE "/" ";" harness_pc_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  foreach(part ${harness_pc_parts})
    string(APPEND harness_pc_prefix "/..")
  endforeach()
endif()
set(harness_pc_libs "")
foreach(lib ${HARNESS_LIBS})
  string(APPEND harness_pc_libs " -l${lib}")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/harness.pc.in ${PROJECT_BINARY_DIR}/harness.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/harness.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# `cpack` (run in the build directory) makes harness-<version>-<system>.tar.gz of exactly what
# `cmake --install` puts under the prefix: the CLI, the libraries, the headers, the package
# files, the licence and the notices (docs/install.md "A tarball").
set(CPACK_GENERATOR TGZ)
set(CPACK_PACKAGE_NAME harness)
set(CPACK_PACKAGE_VENDOR "the harness authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "A runtime for LLM agent sessions with durable, validated context compaction")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_FILE_NAME "harness-${PROJECT_VERSION}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
