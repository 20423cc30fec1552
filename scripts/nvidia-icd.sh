# Sourced by the scripts that run on the GPU machine: where its image registers only PoCL
# with the ICD loader, register NVIDIA's OpenCL driver too (it is installed, just not
# listed); without root, print the command that does it. $1 names the caller in the message.
register_nvidia_icd() {
  if [[ ! -f /etc/OpenCL/vendors/nvidia.icd ]] && ldconfig -p 2>/dev/null | grep -q libnvidia-opencl.so.1; then
    if [[ -w /etc/OpenCL/vendors || ( $(id -u) -eq 0 ) ]]; then
      mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
    else
      echo "$1: NVIDIA's OpenCL driver is not registered; run as root or:" >&2
      echo "  echo libnvidia-opencl.so.1 | sudo tee /etc/OpenCL/vendors/nvidia.icd" >&2
    fi
  fi
}
