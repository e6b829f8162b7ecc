"""Constants fitted from seed_data/ by ``python tools/fit_constants.py``; do not edit.

* ACTIVATION_BYTES_PER_SAMPLE: "label|16/32" -> (activation bytes per sample, reference
  image side or None, fixed bytes), from Lambda v0 peak memory (nvidia-smi) at several batches.
* CNN_ACTIVATION_BYTES_PER_GFLOP, CNN_ACTIVATION_BYTES_PER_ELEMENT (per forward activation
  element, fvcore count), DEFAULT_ACTIVATION_BYTES_PER_PARAM: fallbacks derived from those fits.
* MFU_PRIOR: median achieved MFU per "family|precision class" over single-GPU measurements.
* MFU_RANGE: "family|size|class" -> (10th percentile, median, highest MFU, highest HFU, rows)
  of the measured rows that pass app/model/mfu.py's plausibility limit: the credible bound
  of every answer (app/calibrate/mfu_fit.py; rows listed in docs/mfu_table.md).
* INTENSITY_SLOPE: per non-transformer family, slope of log achieved FLOP rate on log forward
  intensity (FLOPs per activation element), one point per workload, ridge-shrunk
  (app/calibrate/validate.py fit_intensity_slope).
* WIDTH_H0: h0 of a transformer's width efficiency h / (h + h0) on its 6N matmul FLOPs
  (time per sample ∝ 6N·(1 + h0/h) + attention FLOPs), least squares over the log rate ratios
  of pairs of networks measured under the same conditions (app/calibrate/validate.py
  fit_width_h0).
* QLORA_SLOWDOWN: geometric mean LoRA/QLoRA throughput ratio (same model, same GPU).
* COMM_OVERLAP, SCALING_LOSS_PER_DOUBLING: multi-GPU model (app/model/comm.py), fitted to
  the 2-512 GPU measurements weighted by their communication share.
* RANGE_FACTORS, MULTI_GPU_RANGE: 10th/90th percentiles of actual/predicted in
  served-path cross-validation, per situation and per basis (see app/calibrate/fit.py).
"""

ACTIVATION_BYTES_PER_SAMPLE = {'BERT-base uncased|16': (387760466, None, 1848510404),
 'BERT-base uncased|32': (754078890, None, 1915701255),
 'GNMT v2|16': (41466459, None, 3113513541),
 'GNMT v2|32': (71994127, None, 1832024788),
 'Mask R-CNN (ResNet-50 FPN)|16': (1238320965, 800, 1857560679),
 'Mask R-CNN (ResNet-50 FPN)|32': (2132966859, 800, 0),
 'ResNet-50 v1.5|16': (48879739, 224, 494415859),
 'ResNet-50 v1.5|32': (105084055, 224, 0),
 'Tacotron 2|16': (126583122, None, 1286298213),
 'Tacotron 2|32': (256607159, None, 391203212),
 'Transformer-XL base|16': (578833550, None, 6541269002),
 'Transformer-XL base|32': (1162877808, None, 4648531470),
 'Transformer-XL large|32': (2044476358, None, 9983230203),
 'WaveGlow|16': (727611521, None, 6634937396),
 'WaveGlow|32': (1496583129, None, 5815066258)}

CNN_ACTIVATION_BYTES_PER_ELEMENT = 4.4

CNN_ACTIVATION_BYTES_PER_GFLOP = 5976980

COMM_OVERLAP = 0.15

DEFAULT_ACTIVATION_BYTES_PER_PARAM = 5.034

FLOPS_RATE_MODEL = {'cnn|16': (26.6511, 0.2506, 0.4217),
 'cnn|32': (27.844, 0.4215, 0.0998),
 'transformer|16': (21.6008, 0.3124, 1.0671),
 'transformer|32': (21.5036, 0.3179, 1.0264)}

INTENSITY_SLOPE = {'cnn': 0.7996}

MFU_PRIOR = {'cnn|16': 0.1703, 'cnn|32': 0.3203, 'transformer|16': 0.1134, 'transformer|32': 0.1707}

MFU_RANGE = {'cnn|all|16': (0.0685, 0.1653, 0.717, 0.717, 310),
 'cnn|all|32': (0.0929, 0.3087, 0.9993, 0.9993, 301),
 'transformer|1B-20B|16': (0.3609, 0.4861, 0.6911, 0.7933, 141),
 'transformer|1B-20B|8': (0.1275, 0.2633, 0.4459, 0.5946, 27),
 'transformer|<1B|16': (0.0413, 0.1301, 0.6438, 0.6438, 430),
 'transformer|<1B|32': (0.0608, 0.1681, 0.7366, 0.7366, 363),
 'transformer|>=20B|16': (0.313, 0.425, 0.5642, 0.7523, 34),
 'transformer|>=20B|8': (0.1333, 0.3922, 0.4559, 0.6227, 50)}

MULTI_GPU_RANGE = (0.8545, 1.0897)

QLORA_SLOWDOWN = 1.1426

RANGE_FACTORS = {'derived': (0.8369, 1.3202),
 'extrapolated': (0.7537, 1.3616),
 'flops_model': (0.7507, 1.4381),
 'measured': (0.8679, 1.145),
 'precision_switch': (0.6871, 1.5129),
 'scaled': (0.749, 1.3597),
 'sibling': (0.8278, 1.2204)}

SCALING_LOSS_PER_DOUBLING = 0.0125

WIDTH_H0 = {'transformer': 891.0}
