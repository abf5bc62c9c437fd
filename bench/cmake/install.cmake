# `cmake --install`: bench_conv, convlease and convbench-fleet under bin/, the data files and counter profiles under
# share/convbench (where bench_conv looks first, next to its own bin/), the plugin header under
# include/, and the package config that gives find_package(convbench) its convbench::plugin
# target (and convbench::bench_conv, the installed executable).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS bench_conv EXPORT convbenchTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS convlease RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/lease/tools/convbench-fleet DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS convbench_plugin EXPORT convbenchTargets)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/include/convbench/arm_plugin.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/convbench)
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/convbench)
file(GLOB _profile_files ${PROJECT_SOURCE_DIR}/profiles/*.json)
install(FILES ${_profile_files} ${PROJECT_SOURCE_DIR}/profiles/known_metrics.txt
        DESTINATION ${CMAKE_INSTALL_DATADIR}/convbench/profiles)

set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/convbench)
install(EXPORT convbenchTargets NAMESPACE convbench:: DESTINATION ${_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/convbenchConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/convbenchConfig.cmake
                              INSTALL_DESTINATION ${_cmake_dir})
# 0.x: a plugin built against 0.1 is for 0.1 only (the ABI version is checked at load anyway).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/convbenchConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/convbenchConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/convbenchConfigVersion.cmake
        DESTINATION ${_cmake_dir})
