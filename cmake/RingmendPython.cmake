# The Python package (python/): needs a Python 3 interpreter with its
# headers, NumPy, and pybind11's CMake package. RINGMEND_PYTHON chooses:
# AUTO builds it when all are found and says what is missing otherwise; ON
# makes a missing piece an error; OFF skips it.
#
# Which interpreter: Python3_EXECUTABLE when given; else the first of
# `python3` on PATH and /usr/bin/python3 that imports NumPy, preferring one
# that also imports torch (Debian's python3-torch is importable only by
# Debian's interpreter, which a python3 earlier on PATH, e.g. pyenv's, hides).
set(RINGMEND_PYTHON AUTO CACHE STRING "Build the Python package: AUTO, ON or OFF")
set_property(CACHE RINGMEND_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(RINGMEND_PYTHON_FOUND OFF)

function(ringmend_python_missing what)
  if(RINGMEND_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "Python package: ${what} (scripts/bootstrap.sh --with-python installs it)")
  endif()
  message(STATUS "Python package: not built: ${what} (scripts/bootstrap.sh --with-python installs it)")
endfunction()

function(ringmend_find_python)
  if(RINGMEND_PYTHON STREQUAL "OFF")
    message(STATUS "Python package: off (RINGMEND_PYTHON=OFF)")
    return()
  endif()
  if(NOT Python3_EXECUTABLE)
    find_program(path_python3 NAMES python3 NO_CACHE)
    set(with_numpy "")
    set(with_torch "")
    foreach(candidate IN ITEMS ${path_python3} /usr/bin/python3)
      if(NOT EXISTS "${candidate}")
        continue()
      endif()
      execute_process(COMMAND "${candidate}" -c "import numpy" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0 AND NOT with_numpy)
        set(with_numpy "${candidate}")
      endif()
      execute_process(COMMAND "${candidate}" -c "import numpy, torch" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0 AND NOT with_torch)
        set(with_torch "${candidate}")
      endif()
    endforeach()
    if(with_torch)
      set(Python3_EXECUTABLE "${with_torch}" CACHE FILEPATH "The Python interpreter of the Python package")
    elseif(with_numpy)
      set(Python3_EXECUTABLE "${with_numpy}" CACHE FILEPATH "The Python interpreter of the Python package")
    else()
      ringmend_python_missing("no python3 that imports NumPy")
      return()
    endif()
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  if(NOT Python3_Development.Module_FOUND)
    ringmend_python_missing("no headers for ${Python3_EXECUTABLE} (python3-dev)")
    return()
  endif()
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 2.6 CONFIG QUIET)
  if(NOT pybind11_FOUND)
    ringmend_python_missing("pybind11's CMake package not found (pybind11-dev)")
    return()
  endif()
  execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import torch; print(torch.__version__)"
    RESULT_VARIABLE rc OUTPUT_VARIABLE torch_version OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0)
    set(RINGMEND_PYTHON_TORCH_VERSION "${torch_version}" PARENT_SCOPE)
  endif()
  message(STATUS "Python package: built for ${Python3_EXECUTABLE} (Python ${Python3_VERSION}, "
    "pybind11 ${pybind11_VERSION}, torch ${torch_version})")
  set(RINGMEND_PYTHON_FOUND ON PARENT_SCOPE)
  set(RINGMEND_PYTHON_INSTALL_DIR
    ${CMAKE_INSTALL_LIBDIR}/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages PARENT_SCOPE)
endfunction()

# Where the package is assembled in the build tree, and installed.
set(RINGMEND_PYTHON_BUILD_DIR ${PROJECT_BINARY_DIR}/python)

ringmend_find_python()
