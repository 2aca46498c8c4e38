"""A dynamic result of 768 x 3072 holding a micro-kernel of every family, for the tests of its standalone
.cu (tests/dynamic/test_dynamic_export.py on the CPU, tests/gpu/test_export_gpu.py on the GPU)."""

DYN = {"bm": 32, "bn": 64, "bk": 32, "wm": 16, "wn": 32, "stages": 3, "pad": 8, "local_pad": 1}
KERNELS = [("hgemm_dyn", DYN),
           ("hgemm_stream", {"rw": 1, "wn": 2, "wk": 4, "mt": 16, "kw": 64, "stages": 6, "split_k": 2}),
           ("hgemm_wgmma_swap", {"bw": 64, "bt": 32, "swizzle": 128, "stages": 16, "split_k": 3, "reduce": "workspace"}),
           ("hgemm_wgmma_swap", {"bw": 64, "bt": 24, "swizzle": 128, "stages": 12, "split_k": 1, "reduce": "workspace"}),
           ("hgemm_wgmma_splitk", {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 12, "group": 1,
                                   "split_k": 2}),
           ("hgemm_wgmma", {"bm": 128, "bn": 128, "consumers": 2, "swizzle": 128, "stages": 5, "group": 8}),
           ("hgemm_wgmma_sched", {"bm": 128, "bn": 256, "swizzle": 128, "stages": 4, "group": 8,
                                  "schedule": "cooperative", "epi_boxes": 2}),
           # the slices summed in one cluster's shared memory: no workspace, a CTA a work unit
           ("hgemm_wgmma_swap", {"bw": 64, "bt": 32, "swizzle": 128, "stages": 16, "split_k": 2, "reduce": "cluster"})]
TOPS = [4, 16, 96, 192, 256, 1024, 1536]
SPLIT = {1: (16, 32), 2: (32, 64), 4: (64, 64)}          # kernel -> its tile (rows, columns) where K is split
