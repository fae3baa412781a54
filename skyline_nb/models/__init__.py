"""Performance models (pure numpy): linear fits of iteration time and peak memory vs batch size."""

from skyline_nb.models.fit import LinearFit
from skyline_nb.models.performance import PerformanceModels

__all__ = ["LinearFit", "PerformanceModels"]
