// libsystemc.so refers to sc_main; fuzz targets start from libFuzzer's main and never call it.
extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) { return 0; }
