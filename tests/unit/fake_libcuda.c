/* A library named like the CUDA driver (libcuda.so.1) and nothing else: it
   lets a test load "the driver" where there is none (gpu_driver_test.cpp). */
int ringmend_fake_cuda_driver(void) { return 0; }
