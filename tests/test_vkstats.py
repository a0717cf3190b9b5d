"""Pipeline statistics of a real kernel through VK_KHR_pipeline_executable_properties.

Skipped only when no Vulkan device offers the extension (Mesa 22's lavapipe does not); a missing
Vulkan loader or driver is an error here as in the other tests.
"""
import pytest

from pyfftgl import planner
from pyfftgl.backends import vkinfo
from pyfftgl.bench import vkstats as _vkstats
from pyfftgl.limits import Limits


def test_kernel_statistics():
    with vkinfo.instance(vkinfo.load_library()) as (instance, proc):
        assert instance is not None, "no Vulkan instance: is a driver (lavapipe) installed?"
        capable = _vkstats.capable_devices(instance, proc)
    if not capable:
        names = [d["device_name"] for d in vkinfo.physical_devices()]
        pytest.skip(f"no Vulkan device among {names} supports {_vkstats.EXTENSION.decode()}")
    lim = Limits(49152, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32)
    p = planner.plan_fft(1024, 64, False, "backward", lim).passes[0]
    result = _vkstats.kernel_statistics(p.defines({t: 0 for t in p.tables()}))
    assert result, "the pipeline has no executables"
    assert any(e["stats"] for e in result), result
    for e in result:
        assert e["name"] and all(isinstance(v, (bool, int, float)) for v in e["stats"].values()), e
