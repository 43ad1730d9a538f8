# Included by tools/bootstrap.sh into each interface package it generates (CMAKE_PROJECT_INCLUDE):
# only the C side of rosidl is generated (the C structs, their introspection and Fast DDS type
# supports, the type descriptions and the Python bindings), which is all rclpy loads. The C++
# headers and type supports, which nothing in the self-installed environment compiles against,
# were over half of the generation's time. A ROS 2 installation builds acres_interfaces whole.
find_package(ament_cmake_core REQUIRED)  # include-guarded: its macros are not defined again later
macro(ament_register_extension extension_point package_name cmake_filename)
  if(NOT ("${extension_point}" STREQUAL "rosidl_generate_idl_interfaces" AND "${package_name}" MATCHES "_cpp$"))
    list(APPEND AMENT_EXTENSIONS_${extension_point} "${package_name}:${cmake_filename}")
  endif()
endmacro()
