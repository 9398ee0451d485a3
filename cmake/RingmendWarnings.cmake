# Project-wide compile flags: warnings (as errors with RINGMEND_WERROR, which
# CI turns on) and optional sanitizers.
add_library(ringmend_warnings INTERFACE)
target_compile_options(ringmend_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
  $<$<BOOL:${RINGMEND_WERROR}>:-Werror>)

if(RINGMEND_SANITIZE)
  add_compile_options(-fsanitize=${RINGMEND_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RINGMEND_SANITIZE})
endif()
