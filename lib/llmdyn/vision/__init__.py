"""Vision transformers with stochastic depth: images, the model, the grid and its coupling.

May import: ``training`` and everything below it.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["coupling", "images", "suite", "vit"],
    submod_attrs={
        "coupling": ["CLS", "cls_jacobians", "image_coupling", "GridCoupling", "heldout_images",
                     "measure_grid", "sd_slope", "trained_and_untrained", "fits_by_sd",
                     "run_intervals", "example_run"],
        "images": ["FASHION_MNIST_DIR", "FASHION_MNIST_FILES", "FASHION_MNIST_CLASSES",
                   "CIFAR10_CLASSES", "CIFAR10_RECORD", "INSTALL_HINT", "ImageData", "read_idx",
                   "load_fashion_mnist", "load_cifar10", "load_digits", "load_images"],
        "suite": ["VitRun", "VitGrid", "PAPER_WEIGHT_DECAYS", "PAPER_DROP_PATHS", "GRIDS",
                  "get_grid", "grid_data", "shape_for", "ImageTask", "final_checkpoint",
                  "load_vit", "run_config", "train_vit", "train_grid", "default_root",
                  "add_parser", "run_cli"],
        "vit": ["ViTShape", "drop_path", "Attention", "Mlp", "Block", "ViT"],
    },
)
