# The layering, enforced by the compiler (docs/architecture.md).
#
# Every layer names its headers from the project root ("transport/channel.hpp").
# A layer's targets do not get the root itself on their include path, but a
# view of it: a folder of links to that layer and to the layers below it
# that it may use, and to nothing else. An include that points up (coll
# including "membership/epoch.hpp") then fails to compile: the file is not
# in coll's view. The public API (core/include, runtime/include) comes with
# the targets that offer it, as before.
#
#   ringmend_layer(TARGET LAYER [USES LOWER...])
#
# USES lists every layer whose headers LAYER's code (and the lower headers it
# includes) may name: the closure, written out, so that the rule can be read
# in one place below.
set(RINGMEND_LAYER_VIEWS ${CMAKE_BINARY_DIR}/layer-views)

# Which layer may use which (bottom up; core is everyone's, through its own
# include folder).
set(RINGMEND_LAYERS_OF_topo topo)
set(RINGMEND_LAYERS_OF_ulfm ulfm)
set(RINGMEND_LAYERS_OF_transport transport)
set(RINGMEND_LAYERS_OF_coll coll transport)
set(RINGMEND_LAYERS_OF_gpu gpu coll transport)
set(RINGMEND_LAYERS_OF_membership membership coll topo transport ulfm)
set(RINGMEND_LAYERS_OF_slurm slurm ulfm)

# The views, made at configure time (links: nothing is copied).
foreach(layer topo ulfm transport coll gpu membership slurm)
  set(view ${RINGMEND_LAYER_VIEWS}/${layer})
  file(MAKE_DIRECTORY ${view})
  foreach(dir IN LISTS RINGMEND_LAYERS_OF_${layer})
    if(IS_SYMLINK ${view}/${dir})
      file(REMOVE ${view}/${dir})  # the link only
    endif()
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${view}/${dir} SYMBOLIC)
  endforeach()
endforeach()

function(ringmend_layer target layer)
  if(NOT DEFINED RINGMEND_LAYERS_OF_${layer})
    message(FATAL_ERROR "ringmend_layer: no layer '${layer}' in cmake/RingmendLayers.cmake")
  endif()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${RINGMEND_LAYER_VIEWS}/${layer}>)
endfunction()
