"""Vision transformers with stochastic depth: images, the model, the grid and its coupling.

May import: ``training`` and everything below it.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["analysis", "claims", "coupling", "grids", "images", "vit"],
    submod_attrs={
        "analysis": ["COUPLING_COLUMNS", "NOT_FITTED_FACTOR", "FitCheck", "fit_check",
                     "CellCheck", "check_cells", "seed_spread", "signed_r2", "r2_by_sd",
                     "r2_trend", "slope_measure", "slopes_by_wd", "slope_table", "over_vits",
                     "withheld"],
        "claims": ["PAPER_R2", "MIN_R2", "grid_claims"],
        "coupling": ["CLS", "counted_blocks", "both_endpoints", "cls_jacobians", "image_coupling",
                     "GridCoupling", "heldout_images", "measure_grid", "trained_and_untrained",
                     "fits_by_sd", "run_intervals", "example_run"],
        "images": ["FASHION_MNIST_DIR", "FASHION_MNIST_FILES", "FASHION_MNIST_CLASSES",
                   "CIFAR10_CLASSES", "CIFAR10_RECORD", "INSTALL_HINT", "ImageData", "read_idx",
                   "load_fashion_mnist", "load_cifar10", "load_digits", "load_images"],
        "grids": ["VitRun", "VitGrid", "PAPER_WEIGHT_DECAYS", "PAPER_DROP_PATHS",
                  "SCALED_WEIGHT_DECAYS", "GRIDS", "get_grid", "grid_data", "shape_for",
                  "schedule_for", "decay_factor",
                  "ImageTask", "final_checkpoint", "load_vit", "run_config", "train_vit",
                  "train_grid", "default_root"],
        "vit": ["ViTShape", "drop_path", "Attention", "Mlp", "Block", "ViT"],
    },
)
