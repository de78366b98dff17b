/* A stand-in "libcudnn" for test_cudnn_loader: it exports the entry-point
 * names the loader looks up and nothing else (never called, only found). */
int cudnnGetVersion(void);
int cudnnCreate(void);
int cudnnBackendCreateDescriptor(void);
int cudnnBackendExecute(void);

int cudnnGetVersion(void) { return 1; }
int cudnnCreate(void) { return 2; }
int cudnnBackendCreateDescriptor(void) { return 3; }
int cudnnBackendExecute(void) { return 4; }
