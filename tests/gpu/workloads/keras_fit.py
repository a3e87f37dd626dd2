"""Check 12: a small Keras 3 model fits on its JAX backend, then everything is dropped and flushed from outside.

Run by gpu_checks.py with the venv's Python (Keras from the staged wheels), under the shim, with
KERAS_BACKEND=jax and XLA_PYTHON_CLIENT_ALLOCATOR=platform: JAX's default allocator reserves most of the
device up front and never returns it, so only with the platform allocator does a freed buffer reach the
shim (and a flush the driver). Steps: fit 3 epochs; check the model's predictions against a NumPy forward
pass with its own fitted weights (the pool must not have changed a byte); drop the model,
`keras.backend.clear_session()`; then `vramshim flush --deep <pid>` and NVML's used memory before and after.
Prints one JSON line {"event": "result", …}; exits 3 with {"event": "error", …} when Keras, JAX or a GPU is
missing.
"""

import argparse
import gc
import json
import os
import sys

import outside_view

SAMPLES = 8192
FEATURES = 256
WIDTH = 1024
EPOCHS = 3


def emit(**event):
    print(json.dumps(event), flush=True)


def build(keras):
    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(WIDTH, activation="relu"),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy")
    return model


def numpy_forward(np, weights, inputs):
    """The model's forward pass in float64 NumPy from its weights [kernel, bias, …]."""
    hidden = inputs.astype(np.float64)
    for index in range(0, len(weights), 2):
        hidden = hidden @ weights[index] + weights[index + 1]
        hidden = np.maximum(hidden, 0) if index + 2 < len(weights) else 1 / (1 + np.exp(-hidden))
    return hidden


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cli", default="vramshim", help="the vramshim command, for the flush")
    args = parser.parse_args()
    os.environ.setdefault("KERAS_BACKEND", "jax")
    try:
        import jax
        import keras
        import numpy as np
    except Exception as error:
        emit(event="error", error=f"cannot import keras with jax: {error}")
        return 3
    if keras.backend.backend() != "jax":
        emit(event="error", error=f"Keras runs on {keras.backend.backend()}, not jax")
        return 3
    try:
        device = jax.devices()[0]
    except Exception as error:
        emit(event="error", error=f"JAX has no device: {error}")
        return 3
    if device.platform != "gpu":
        emit(event="error", error=f"JAX runs on {device.platform}, not a GPU")
        return 3
    # Full float32 matmuls: TF32 would make the comparison with NumPy a question of tolerance.
    jax.config.update("jax_default_matmul_precision", "highest")
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((SAMPLES, FEATURES)).astype(np.float32)
    labels = (inputs @ rng.standard_normal((FEATURES, 1)) > 0).astype(np.float32)

    model = build(keras)  # line: build
    history = model.fit(inputs, labels, batch_size=256, epochs=EPOCHS, verbose=0)  # line: fit
    losses = [float(value) for value in history.history["loss"]]
    probe = inputs[:512]
    predicted = np.asarray(model.predict(probe, batch_size=512, verbose=0), dtype=np.float64)
    expected = numpy_forward(np, [np.asarray(weight) for weight in model.get_weights()], probe)
    max_error = float(np.max(np.abs(predicted - expected)))
    learned = all(np.isfinite(losses)) and losses[-1] < losses[0]
    correct = learned and max_error < 1e-4

    used_after_fit = outside_view.nvml_used_bytes()
    del model, history, predicted
    keras.backend.clear_session()
    gc.collect()
    jax.effects_barrier()  # whatever JAX still runs is done, so its buffers are freed before the flush
    used_before = outside_view.nvml_used_bytes()
    status, text = outside_view.run_cli(args.cli, "flush", "--deep")
    used_after = outside_view.nvml_used_bytes()
    emit(
        event="result",
        framework="keras",
        version=keras.__version__,
        jax=jax.__version__,
        device=str(device.device_kind),
        correct=bool(correct),
        error="" if correct else (f"losses {losses}" if not learned else f"predictions differ by {max_error:.3g}"),
        losses=losses,
        max_prediction_error=max_error,
        flush={
            "ok": status == 0,
            "cli_output": text[-400:],
            "released_bytes": outside_view.released_bytes(text),
            "nvml_used_after_fit": used_after_fit,
            "nvml_used_drop_at_clear_session": outside_view.drop(used_after_fit, used_before),
            "nvml_used_drop": outside_view.drop(used_before, used_after),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
