"""Device profiles, the old public path: they belong to device selection and live in
pyfftgl/backends/profiles.py (whose docstring tells what a profile is); these are its names."""
from __future__ import annotations

from .backends.profiles import (ENV, PROFILES, DeviceProfile, active, check_api,  # noqa: F401
                                describe, device_profile, fit, get_profile, info_of,
                                on_profile_change, set_device_profile)
