# Installation of the CMake package (find_package(ringmend CONFIG) gives
# ringmend::ringmend) and of the pkg-config file.
include(CMakePackageConfigHelpers)

set(RINGMEND_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ringmend)
install(EXPORT ringmendTargets NAMESPACE ringmend:: DESTINATION ${RINGMEND_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ringmendConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ringmendConfig.cmake
  INSTALL_DESTINATION ${RINGMEND_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ringmendConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ringmendConfig.cmake ${PROJECT_BINARY_DIR}/ringmendConfigVersion.cmake
  DESTINATION ${RINGMEND_INSTALL_CMAKEDIR})

# pkg-config: MPI is a private dependency of the shared library.
configure_file(${PROJECT_SOURCE_DIR}/cmake/ringmend.pc.in ${PROJECT_BINARY_DIR}/ringmend.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ringmend.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The FT mpirun arguments, for the launcher and for users' scripts.
install(FILES ${PROJECT_SOURCE_DIR}/ulfm/ft_mpirun_args.txt DESTINATION ${CMAKE_INSTALL_DATADIR}/ringmend)
