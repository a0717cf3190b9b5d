"""Fixes to Kompute 0.9.0's submission path, applied to its sources before the build.

1. One VkFence per Sequence instead of one per submission. kp's Sequence::evalAsync creates a
   fence for every submission and evalAwait destroys it. On NVIDIA's driver (580.159, H200)
   creating and destroying a fence costs ~0.7 ms, which was the whole of kp's ~0.6 ms per eval
   (pyfftgl/bench/vkfloor.py measures an empty submission at 27 us with a reused fence and
   704 us with a fresh one). The fence is now created on first use, reset after a successful
   wait, and destroyed with the Sequence.
2. The Python binding of Sequence.eval_async() (no arguments) called eval(), which waits for the
   GPU; it now calls evalAsync(), so a submission returns as soon as it is queued.
3. kp.OpMemoryBarrier is bound to Python (kp 0.9.0 has the C++ class but no binding), with its
   access and stage masks as plain Vulkan flag integers. Without it, the only way to order one
   dispatch after another was to record a device-to-staging copy in between (see
   pyfftgl/backends/vulkan.py).
4. Sequence::evalAwait polls the fence for up to 2 ms before blocking in vkWaitForFences. On
   NVIDIA's driver a blocking wait on work that takes a few hundred microseconds often woke late:
   a 260 us batched FFT took 308 us per call at best but 491 us at the median (GL's glFinish:
   527 / 532 us for the same kernel's 510 us). The caller asked to wait, so a spinning core is
   the price of getting the result when it is ready, as CUDA's default synchronisation does.
5. Timestamps where the caller puts them. kp latched a timestamp (all-commands stage) after every
   recorded op, which on NVIDIA's driver waits for the GPU to drain each time: on the H200 a chain
   of dependent dispatches took 3.6 us per dispatch by those timestamps against 1.7 us by the wall
   clock without them, and fft2 1024^2 19.8 us against 16.9 us. Sequence.record_timestamp() now
   latches one after everything recorded so far, ops latch none of their own, and
   get_timestamps() returns the one latched when recording began followed by these, as CUDA
   events or GL timer queries bracket a span. The pool is also reset when recording begins
   (Vulkan requires a query to be reset before it is written; kp never did).

6. No barriers of its own before a dispatch. OpAlgoDispatch recorded a transfer -> compute
   barrier for each tensor it binds (three pipeline barriers per FFT pass) whatever came before;
   pyfftgl records the barriers a submission needs itself (pyfftgl/backends/vulkan.py: one
   transfer -> compute barrier where a submission begins, one compute -> compute barrier between
   dependent dispatches).

7. The device is created with shaderFloat64 enabled where the GPU has it (kp enabled no
   features): Vulkan requires a feature a shader module uses (pyfftgl's PRECISION 64 kernels
   declare the Float64 capability) to be enabled on the device. With PYFFTGL_VK_ROBUST set
   (any value) robustBufferAccess is enabled too, as wgpu enables it on every Vulkan device
   (with PYFFTGL_VK_ROBUST=2 also VK_EXT_robustness2's robustBufferAccess2, as wgpu does where
   the device offers it: pyfftgl/backends/vulkan.py then asks for the extension): the
   Vulkan backend then runs under the bounds checking the WebGPU backend gets from the driver
   (docs/devices.md). Off by default: pyfftgl's accesses are bounded by the planner.

8. Algorithms that share a pipeline. kp binds tensors when it makes an algorithm, so running a
   kernel on other buffers made a whole new shader module, descriptor set layout, pipeline
   layout, pipeline cache and pipeline. Manager.algorithm_like(base, tensors, workgroup) makes
   an algorithm that runs base's pipeline on other tensors: it owns only its descriptor pool and
   set (and its tensors, workgroup and push constant values) and keeps base alive, so the shared
   objects are destroyed once, by base, after every sharer is gone. A sharer keeps no copy of the
   SPIR-V either.

9. No host memory kept per object made and destroyed. kp's Manager records a weak_ptr to every
   tensor, algorithm and sequence it makes and only drops expired ones when asked (Manager::clear,
   not bound to Python), so a long-running program grew by tens of bytes per object; the records
   are now pruned whenever they have doubled since the last pruning. An Algorithm also never freed
   its push and specialization constant data (a comment said the command buffer did).

10. OpMemoryBarrier with no tensors records one global VkMemoryBarrier (same access and stage
   masks) in one vkCmdPipelineBarrier, where kp recorded one buffer barrier per tensor and none
   for an empty list: one call orders everything a submission's dispatches touch.

11. Sequence.is_done() reads the fence of the last evalAsync without waiting, so that
   pyfftgl/backends/vulkan.py can hold the calls made while the GPU is busy and record them into
   one command buffer (on NVIDIA's driver each submission left the GPU idle for about 5 us).

12. Clean under Khronos' validation layer (docs/drivers.md, tests/test_validation.py):
   - command pools have the reset bit: pyfftgl records a sequence again (Sequence.clear, merged
     calls), and beginning a used command buffer from a pool without it is invalid
     (VUID-vkBeginCommandBuffer-commandBuffer-00050);
   - storage tensors have transfer usage: pyfftgl copies to and from them
     (VUID-vkCmdCopyBuffer-srcBuffer-00118, -dstBuffer-00120);
   - the device's queue families are queried even when the caller names them: the layer checks
     a family index against the count the instance was told, and pyfftgl names NVIDIA's
     compute-only family (VUID-VkDeviceQueueCreateInfo-queueFamilyIndex-00381); an index past
     the count is an error here;
   - portability enumeration (VK_KHR_portability_enumeration and the instance flag) where the
     loader offers it, and VK_KHR_portability_subset where the device has it: MoltenVK's
     devices are listed only to such an instance;
   - no layers unless asked for (VK_INSTANCE_LAYERS or KOMPUTE_ENV_DEBUG_LAYERS): kp enabled
     the validation layer wherever it was installed, which made every program slow;
   - patch 11's Sequence.eval_async_after is gone (pyfftgl records merged calls into one
     command buffer instead).

13. A device memory pool (tools/kp_memory_pool.hpp, copied in as kompute/MemoryPool.hpp). kp made
   one VkDeviceMemory per tensor, two for a device tensor (its staging buffer), so a program
   holding a few thousand small arrays met maxMemoryAllocationCount (4096 on Windows drivers) and
   Khronos' best practices reported every one (vkAllocateMemory-small-allocation). The Manager's
   MemoryPool now binds each buffer at an offset in a few large blocks per memory type (size
   classes, best fit, freed ranges merged; blocks double from 1 MiB to 64 MiB; 16 MiB buffers
   and larger have allocations of their own), maps host-visible blocks once, keeps within the
   limit (Manager.memory_pool_limit lowers it), and frees its blocks before the device goes.
   A tensor gives its ranges back when destroyed, also when its construction fails half-way.
   Python: Manager.memory_pool_stats(), memory_pool_trim() (frees the blocks no buffer uses),
   memory_pool_limit(count). Descriptors are unchanged: each buffer still starts at offset 0.

14. Host-visible memory from a HOST_CACHED type where the device has one. kp took the first type
   with HOST_VISIBLE | HOST_COHERENT for staging buffers, which on NVIDIA's driver is the
   write-combined, uncached one: the CPU reads a download out of it at a fraction of memcpy's
   speed. A type with HOST_CACHED as well (and every flag asked for: still coherent, so no
   invalidation is needed) is taken first, else the first that has the flags asked for, as before.

Usage: python tools/kp_patch.py <unpacked kp source folder>. Idempotent; fails loudly if the
sources are not the ones this patch was written against.
"""
import sys
from pathlib import Path

# The patch level: builds of kp are cached and checked per level, so bump it with any change here.
LEVEL = 16

MARK = "// pyfftgl: one fence per Sequence"
EDITS = [
    ("    this->mFence = this->mDevice->createFence(vk::FenceCreateInfo());\n",
     f"    {MARK}\n    if (!this->mFence) {{\n"
     "        this->mFence = this->mDevice->createFence(vk::FenceCreateInfo());\n    }\n"),
    ("    this->mDevice->destroy(\n"
     "      this->mFence, (vk::Optional<const vk::AllocationCallbacks>)nullptr);\n",
     "    if (result == vk::Result::eSuccess) {\n"
     "        (void)this->mDevice->resetFences(1, &this->mFence);\n"
     "    } else {  // still pending: never reuse it, the next submission makes a new one\n"
     "        this->mFence = nullptr;\n    }\n"),
    ("    if (this->mFreeCommandBuffer) {\n        KP_LOG_INFO(\"Freeing CommandBuffer\");\n",
     "    if (this->mFence) {\n"
     "        this->mDevice->destroy(\n"
     "          this->mFence, (vk::Optional<const vk::AllocationCallbacks>)nullptr);\n"
     "        this->mFence = nullptr;\n    }\n\n"
     "    if (this->mFreeCommandBuffer) {\n        KP_LOG_INFO(\"Freeing CommandBuffer\");\n"),
]


BARRIER_MARK = "// pyfftgl: OpMemoryBarrier binding"
BINDING_EDITS = [
    ('        "eval_async",\n        [](kp::Sequence& self) { return self.eval(); },\n',
     '        "eval_async",\n        [](kp::Sequence& self) { return self.evalAsync(); },\n'),
    ('    py::class_<kp::OpMult, kp::OpBase, std::shared_ptr<kp::OpMult>>(\n',
     f"    {BARRIER_MARK}\n"
     "    py::class_<kp::OpMemoryBarrier, kp::OpBase, std::shared_ptr<kp::OpMemoryBarrier>>(\n"
     '      m, "OpMemoryBarrier")\n'
     "      .def(py::init([](const std::vector<std::shared_ptr<kp::Tensor>>& tensors,\n"
     "                       uint32_t srcAccess, uint32_t dstAccess, uint32_t srcStage,\n"
     "                       uint32_t dstStage, bool primary) {\n"
     "               return std::make_unique<kp::OpMemoryBarrier>(\n"
     "                 tensors, static_cast<vk::AccessFlagBits>(srcAccess),\n"
     "                 static_cast<vk::AccessFlagBits>(dstAccess),\n"
     "                 static_cast<vk::PipelineStageFlagBits>(srcStage),\n"
     "                 static_cast<vk::PipelineStageFlagBits>(dstStage), primary);\n"
     "           }),\n"
     '           py::arg("tensors"), py::arg("src_access"), py::arg("dst_access"),\n'
     '           py::arg("src_stage"), py::arg("dst_stage"), py::arg("primary") = true);\n\n'
     "    py::class_<kp::OpMult, kp::OpBase, std::shared_ptr<kp::OpMult>>(\n"),
]


POLL_MARK = "// pyfftgl: poll before blocking"
POLL_EDITS = [
    ('#include "kompute/Sequence.hpp"\n', '#include "kompute/Sequence.hpp"\n\n#include <chrono>\n'),
    ("    vk::Result result =\n"
     "      this->mDevice->waitForFences(1, &this->mFence, VK_TRUE, waitFor);\n",
     f"    {POLL_MARK}\n"
     "    const auto pollStart = std::chrono::steady_clock::now();\n"
     "    while (this->mDevice->getFenceStatus(this->mFence) == vk::Result::eNotReady &&\n"
     "           std::chrono::steady_clock::now() - pollStart < std::chrono::milliseconds(2)) {\n"
     "    }\n"
     "    vk::Result result =\n"
     "      this->mDevice->waitForFences(1, &this->mFence, VK_TRUE, waitFor);\n"),
]


STAMP_MARK = "// pyfftgl: span timestamps"
STAMP_HEADER_EDITS = [
    ("    std::vector<std::uint64_t> getTimestamps();\n",
     "    std::vector<std::uint64_t> getTimestamps();\n\n"
     f"    {STAMP_MARK}\n"
     "    // Latch a timestamp after everything recorded so far (ops latch none of their own).\n"
     "    std::shared_ptr<Sequence> recordTimestamp();\n"),
    ("    std::shared_ptr<vk::QueryPool> timestampQueryPool = nullptr;\n",
     "    std::shared_ptr<vk::QueryPool> timestampQueryPool = nullptr;\n"
     "    uint32_t mTimestampCount = 0; // queries in the pool\n"
     "    uint32_t mMarks = 0; // timestamps latched by recordTimestamp() in this recording\n"),
]
STAMP_EDITS = [
    ("    // latch the first timestamp before any commands are submitted\n"
     "    if (this->timestampQueryPool)\n",
     f"    {STAMP_MARK}\n"
     "    this->mMarks = 0;\n"
     "    if (this->timestampQueryPool)\n"
     "        this->mCommandBuffer->resetQueryPool(\n"
     "          *this->timestampQueryPool, 0, this->mTimestampCount);\n\n"
     "    // latch the first timestamp before any commands are submitted\n"
     "    if (this->timestampQueryPool)\n"),
    ("    if (this->timestampQueryPool)\n"
     "        this->mCommandBuffer->writeTimestamp(\n"
     "          vk::PipelineStageFlagBits::eAllCommands,\n"
     "          *this->timestampQueryPool,\n"
     "          this->mOperations.size());\n\n"
     "    return shared_from_this();\n}\n",
     "    return shared_from_this();\n}\n\n"
     "std::shared_ptr<Sequence>\n"
     "Sequence::recordTimestamp()\n{\n"
     "    if (!this->timestampQueryPool)\n"
     "        throw std::runtime_error(\"Timestamp latching not enabled\");\n"
     "    this->begin();\n"
     "    if (this->mMarks + 1 >= this->mTimestampCount)\n"
     "        throw std::runtime_error(\n"
     "          \"more timestamps recorded than the Sequence was created for\");\n"
     "    this->mMarks += 1;\n"
     "    this->mCommandBuffer->writeTimestamp(\n"
     "      vk::PipelineStageFlagBits::eAllCommands,\n"
     "      *this->timestampQueryPool,\n"
     "      this->mMarks);\n"
     "    return shared_from_this();\n}\n"),
    ("        queryPoolInfo.setQueryCount(totalTimestamps);\n",
     "        queryPoolInfo.setQueryCount(totalTimestamps);\n"
     "        this->mTimestampCount = totalTimestamps;\n"),
    ("    const auto n = this->mOperations.size() + 1;\n",
     "    const auto n = this->mMarks + 1;\n"),
]
STAMP_BINDING_EDITS = [
    ('      .def("get_timestamps",\n',
     f"      {STAMP_MARK}\n"
     '      .def("record_timestamp", &kp::Sequence::recordTimestamp)\n'
     '      .def("get_timestamps",\n'),
]

DISPATCH_MARK = "// pyfftgl: no barriers of its own before a dispatch"
DISPATCH_EDITS = [
    ("    // Barrier to ensure the data is finished writing to buffer memory\n"
     "    for (const std::shared_ptr<Tensor>& tensor :\n"
     "         this->mAlgorithm->getTensors()) {\n"
     "        tensor->recordPrimaryBufferMemoryBarrier(\n"
     "          commandBuffer,\n"
     "          vk::AccessFlagBits::eTransferWrite,\n"
     "          vk::AccessFlagBits::eShaderRead,\n"
     "          vk::PipelineStageFlagBits::eTransfer,\n"
     "          vk::PipelineStageFlagBits::eComputeShader);\n"
     "    }\n",
     f"    {DISPATCH_MARK}: the caller records the ones it needs\n"),
]


FEATURES_MARK = "// pyfftgl: enable shaderFloat64"
FEATURES_EDITS = [
    ("                                          validExtensions.data());\n\n"
     "    this->mDevice = std::make_shared<vk::Device>();\n",
     "                                          validExtensions.data());\n"
     f"    {FEATURES_MARK} where the device has it (double-precision kernels)\n"
     "    vk::PhysicalDeviceFeatures enabledFeatures;\n"
     "    enabledFeatures.shaderFloat64 = physicalDevice.getFeatures().shaderFloat64;\n"
     "    // and robust buffer access where PYFFTGL_VK_ROBUST asks (wgpu's devices run with it)\n"
     "    enabledFeatures.robustBufferAccess = std::getenv(\"PYFFTGL_VK_ROBUST\") != nullptr\n"
     "        && physicalDevice.getFeatures().robustBufferAccess;\n"
     "    deviceCreateInfo.setPEnabledFeatures(&enabledFeatures);\n"
     "    // PYFFTGL_VK_ROBUST=2: robustBufferAccess2 too, where VK_EXT_robustness2 was asked for\n"
     "    vk::PhysicalDeviceRobustness2FeaturesEXT robustness2;\n"
     "    robustness2.robustBufferAccess2 = VK_TRUE;\n"
     "    for (const char* ext : validExtensions) {\n"
     "        if (enabledFeatures.robustBufferAccess\n"
     "            && std::string(ext) == VK_EXT_ROBUSTNESS_2_EXTENSION_NAME) {\n"
     "            deviceCreateInfo.setPNext(&robustness2);\n"
     "        }\n"
     "    }\n\n"
     "    this->mDevice = std::make_shared<vk::Device>();\n"),
]


SHARE_MARK = "// pyfftgl: share a pipeline"
SHARE_HEADER_EDITS = [
    ("    /**\n     *  Rebuild function to reconstruct algorithm",
     f"    {SHARE_MARK}: an algorithm running like's pipeline (its shader module, descriptor set\n"
     "    // layout, pipeline layout, cache and pipeline, kept alive through `like`) on other\n"
     "    // tensors; it owns only its descriptor pool and set, workgroup and push constants.\n"
     "    Algorithm(std::shared_ptr<vk::Device> device,\n"
     "              const std::shared_ptr<Algorithm>& like,\n"
     "              const std::vector<std::shared_ptr<Tensor>>& tensors,\n"
     "              const Workgroup& workgroup = {});\n\n"
     "    /**\n     *  Rebuild function to reconstruct algorithm"),
    ("    std::shared_ptr<vk::Device> mDevice;\n    std::vector<std::shared_ptr<Tensor>> mTensors;\n",
     "    std::shared_ptr<vk::Device> mDevice;\n    std::vector<std::shared_ptr<Tensor>> mTensors;\n"
     "    std::shared_ptr<Algorithm> mLike; // owner of the shared pipeline objects, if any\n"),
]
SHARE_EDITS = [
    ("    this->destroy();\n}\n\nbool\nAlgorithm::isInit()",
     "    this->destroy();\n"
     "    free(this->mPushConstantsData); // pyfftgl: owned here (kp never freed them)\n"
     "    free(this->mSpecializationConstantsData);\n}\n\n"
     f"{SHARE_MARK}\n"
     "Algorithm::Algorithm(std::shared_ptr<vk::Device> device,\n"
     "                     const std::shared_ptr<Algorithm>& like,\n"
     "                     const std::vector<std::shared_ptr<Tensor>>& tensors,\n"
     "                     const Workgroup& workgroup)\n{\n"
     "    if (!like || !like->isInit()) {\n"
     "        throw std::runtime_error(\n"
     "          \"Kompute Algorithm: the algorithm to share a pipeline with is not built\");\n"
     "    }\n"
     "    if (tensors.size() != like->mTensors.size()) {\n"
     "        throw std::runtime_error(fmt::format(\n"
     "          \"Kompute Algorithm: {} tensors given, the shared pipeline binds {}\",\n"
     "          tensors.size(),\n"
     "          like->mTensors.size()));\n"
     "    }\n"
     "    this->mDevice = device;\n"
     "    this->mTensors = tensors;\n"
     "    this->mLike = like->mLike ? like->mLike : like;\n"
     "    this->mShaderModule = like->mShaderModule;\n"
     "    this->mDescriptorSetLayout = like->mDescriptorSetLayout;\n"
     "    this->mPipelineLayout = like->mPipelineLayout;\n"
     "    this->mPipelineCache = like->mPipelineCache;\n"
     "    this->mPipeline = like->mPipeline;\n"
     "    if (like->mPushConstantsSize) {\n"
     "        const uint32_t totalSize =\n"
     "          like->mPushConstantsSize * like->mPushConstantsDataTypeMemorySize;\n"
     "        this->mPushConstantsData = malloc(totalSize);\n"
     "        memcpy(this->mPushConstantsData, like->mPushConstantsData, totalSize);\n"
     "        this->mPushConstantsDataTypeMemorySize =\n"
     "          like->mPushConstantsDataTypeMemorySize;\n"
     "        this->mPushConstantsSize = like->mPushConstantsSize;\n"
     "    }\n"
     "    this->setWorkgroup(workgroup, tensors.size() ? tensors[0]->size() : 1);\n"
     "    this->createParameters(); // the layout is like's: only the pool and set are made\n"
     "}\n\nbool\nAlgorithm::isInit()"),
    ("        this->mDescriptorPool = nullptr;\n    }\n}\n",
     "        this->mDescriptorPool = nullptr;\n    }\n\n"
     f"    {SHARE_MARK}: a sharer lets go of what it shares (its owner destroys it)\n"
     "    if (this->mLike) {\n"
     "        this->mShaderModule = nullptr;\n"
     "        this->mDescriptorSetLayout = nullptr;\n"
     "        this->mPipelineLayout = nullptr;\n"
     "        this->mPipelineCache = nullptr;\n"
     "        this->mPipeline = nullptr;\n"
     "        this->mLike = nullptr;\n"
     "    }\n}\n"),
    ("    KP_LOG_DEBUG(\"Kompute Algorithm creating descriptor set layout\");\n"
     "    this->mDescriptorSetLayout = std::make_shared<vk::DescriptorSetLayout>();\n"
     "    this->mDevice->createDescriptorSetLayout(\n"
     "      &descriptorSetLayoutInfo, nullptr, this->mDescriptorSetLayout.get());\n"
     "    this->mFreeDescriptorSetLayout = true;\n",
     "    if (!this->mDescriptorSetLayout) { // a sharer has its owner's\n"
     "        KP_LOG_DEBUG(\"Kompute Algorithm creating descriptor set layout\");\n"
     "        this->mDescriptorSetLayout = std::make_shared<vk::DescriptorSetLayout>();\n"
     "        this->mDevice->createDescriptorSetLayout(\n"
     "          &descriptorSetLayoutInfo, nullptr, this->mDescriptorSetLayout.get());\n"
     "        this->mFreeDescriptorSetLayout = true;\n"
     "    }\n"),
]
SHARE_MANAGER_EDITS = [
    ("    /**\n     * Destroy the GPU resources and all managed resources by manager.\n",
     f"    {SHARE_MARK}: an algorithm running like's pipeline on other tensors\n"
     "    std::shared_ptr<Algorithm> algorithmLike(\n"
     "      const std::shared_ptr<Algorithm>& like,\n"
     "      const std::vector<std::shared_ptr<Tensor>>& tensors,\n"
     "      const Workgroup& workgroup = {})\n    {\n"
     "        std::shared_ptr<Algorithm> algorithm{ new kp::Algorithm(\n"
     "          this->mDevice, like, tensors, workgroup) };\n\n"
     "        if (this->mManageResources) {\n"
     "            this->pruneRecords();\n"
     "            this->mManagedAlgorithms.push_back(algorithm);\n"
     "        }\n\n"
     "        return algorithm;\n    }\n\n"
     "    /**\n     * Destroy the GPU resources and all managed resources by manager.\n"),
]
SHARE_BINDING_EDITS = [
    ('      .def(\n        "algorithm",\n        [](kp::Manager& self,\n'
     "           const std::vector<std::shared_ptr<kp::Tensor>>& tensors,\n"
     "           const py::bytes& spirv,\n",
     f"      {SHARE_MARK}\n"
     '      .def("algorithm_like",\n'
     "           &kp::Manager::algorithmLike,\n"
     '           py::arg("like"),\n'
     '           py::arg("tensors"),\n'
     '           py::arg("workgroup") = kp::Workgroup())\n'
     '      .def(\n        "algorithm",\n        [](kp::Manager& self,\n'
     "           const std::vector<std::shared_ptr<kp::Tensor>>& tensors,\n"
     "           const py::bytes& spirv,\n"),
]

PRUNE_MARK = "// pyfftgl: prune expired records"
PRUNE_HEADER_EDITS = [
    ("          this->mPhysicalDevice, this->mDevice, data, tensorType) };\n\n"
     "        if (this->mManageResources) {\n",
     "          this->mPhysicalDevice, this->mDevice, data, tensorType) };\n\n"
     "        if (this->mManageResources) {\n            this->pruneRecords();\n"),
    ("                                                       tensorType) };\n\n"
     "        if (this->mManageResources) {\n",
     "                                                       tensorType) };\n\n"
     "        if (this->mManageResources) {\n            this->pruneRecords();\n"),
    ("          pushConstants) };\n\n        if (this->mManageResources) {\n",
     "          pushConstants) };\n\n        if (this->mManageResources) {\n"
     "            this->pruneRecords();\n"),
    ("    std::vector<std::weak_ptr<Algorithm>> mManagedAlgorithms;\n",
     "    std::vector<std::weak_ptr<Algorithm>> mManagedAlgorithms;\n"
     f"    {PRUNE_MARK} once they have doubled since the last pruning\n"
     "    size_t mPruneAt = 256;\n"
     "    void pruneRecords();\n"),
]
PRUNE_EDITS = [
    ("    if (this->mManageResources) {\n        this->mManagedSequences.push_back(sq);\n",
     "    if (this->mManageResources) {\n        this->pruneRecords();\n"
     "        this->mManagedSequences.push_back(sq);\n"),
    ("void\nManager::clear()\n",
     f"{PRUNE_MARK}: amortised O(1) per object made\n"
     "void\nManager::pruneRecords()\n{\n"
     "    const auto records = [this] {\n"
     "        return this->mManagedTensors.size() + this->mManagedAlgorithms.size() +\n"
     "               this->mManagedSequences.size();\n"
     "    };\n"
     "    if (records() < this->mPruneAt)\n        return;\n"
     "    this->clear();\n"
     "    this->mPruneAt = 2 * records() + 256;\n}\n\n"
     "void\nManager::clear()\n"),
]

GLOBAL_BARRIER_MARK = "// pyfftgl: one global barrier for no tensors"
GLOBAL_BARRIER_EDITS = [
    ("    KP_LOG_DEBUG(\"Kompute OpMemoryBarrier record called\");\n",
     "    KP_LOG_DEBUG(\"Kompute OpMemoryBarrier record called\");\n\n"
     f"    {GLOBAL_BARRIER_MARK}: covers every buffer\n"
     "    if (this->mTensors.empty()) {\n"
     "        const vk::MemoryBarrier memoryBarrier(this->mSrcAccessMask,\n"
     "                                              this->mDstAccessMask);\n"
     "        commandBuffer.pipelineBarrier(this->mSrcStageMask,\n"
     "                                      this->mDstStageMask,\n"
     "                                      vk::DependencyFlags(),\n"
     "                                      memoryBarrier,\n"
     "                                      nullptr,\n"
     "                                      nullptr);\n"
     "        return;\n    }\n"),
]


DONE_MARK = "// pyfftgl: fence status"
DONE_HEADER_EDITS = [
    ("    bool isRunning() const;\n",
     "    bool isRunning() const;\n\n"
     f"    {DONE_MARK}\n"
     "    // Whether the last evalAsync's work has finished (its fence signalled), without waiting.\n"
     "    bool isDone() const;\n"),
]
DONE_EDITS = [
    ("bool\nSequence::isRunning() const\n",
     f"{DONE_MARK}\n"
     "bool\nSequence::isDone() const\n{\n"
     "    return !this->mIsRunning || !this->mFence ||\n"
     "           this->mDevice->getFenceStatus(this->mFence) != vk::Result::eNotReady;\n}\n\n"
     "bool\nSequence::isRunning() const\n"),
]
DONE_BINDING_EDITS = [
    ('      .def("is_init", &kp::Sequence::isInit, DOC(kp, Sequence, isInit))\n',
     '      .def("is_init", &kp::Sequence::isInit, DOC(kp, Sequence, isInit))\n'
     f"      {DONE_MARK}\n"
     '      .def("is_done", &kp::Sequence::isDone)\n'),
]


RESET_MARK = "// pyfftgl: command buffers begun again"
RESET_EDITS = [
    ("    vk::CommandPoolCreateInfo commandPoolInfo(vk::CommandPoolCreateFlags(),\n",
     f"    {RESET_MARK} (Sequence::clear and every record after an eval) need the reset bit\n"
     "    vk::CommandPoolCreateInfo commandPoolInfo(\n"
     "      vk::CommandPoolCreateFlagBits::eResetCommandBuffer,\n"),
]

USAGE_MARK = "// pyfftgl: storage tensors are copied"
USAGE_EDITS = [
    ("        case TensorTypes::eStorage:\n"
     "            return vk::BufferUsageFlagBits::eStorageBuffer;\n",
     "        case TensorTypes::eStorage:\n"
     f"            {USAGE_MARK} to and from (OpTensorCopy), which needs transfer usage\n"
     "            return vk::BufferUsageFlagBits::eStorageBuffer |\n"
     "                   vk::BufferUsageFlagBits::eTransferSrc |\n"
     "                   vk::BufferUsageFlagBits::eTransferDst;\n"),
]

INSTANCE_MARK = "// pyfftgl: instance layers and portability"
INSTANCE_EDITS = [
    ("    std::vector<const char*> applicationExtensions;\n",
     "    std::vector<const char*> applicationExtensions;\n\n"
     f"    {INSTANCE_MARK}: MoltenVK's devices are listed only to an instance that\n"
     "    // enables portability enumeration, where the loader offers it.\n"
     "    bool portability = false;\n"
     "#ifdef VK_KHR_portability_enumeration\n"
     "    for (const vk::ExtensionProperties& ext :\n"
     "         vk::enumerateInstanceExtensionProperties()) {\n"
     "        if (std::string(ext.extensionName.data()) ==\n"
     "            VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME) {\n"
     "            portability = true;\n"
     "        }\n"
     "    }\n"
     "    if (portability) {\n"
     "        applicationExtensions.push_back(\n"
     "          VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);\n"
     "    }\n"
     "#endif\n"),
    ("    computeInstanceCreateInfo.pApplicationInfo = &applicationInfo;\n",
     "    computeInstanceCreateInfo.pApplicationInfo = &applicationInfo;\n"
     "#ifdef VK_KHR_portability_enumeration\n"
     "    if (portability) {\n"
     "        computeInstanceCreateInfo.flags |=\n"
     "          vk::InstanceCreateFlagBits::eEnumeratePortabilityKHR;\n"
     "    }\n"
     "#endif\n"),
    ("    std::vector<const char*> desiredLayerNames = {\n"
     "        \"VK_LAYER_LUNARG_assistant_layer\",\n"
     "        \"VK_LAYER_LUNARG_standard_validation\",\n"
     "        \"VK_LAYER_KHRONOS_validation\",\n"
     "    };\n",
     f"    {INSTANCE_MARK}: only the layers asked for (KOMPUTE_ENV_DEBUG_LAYERS, or the\n"
     "    // loader's VK_INSTANCE_LAYERS); kp enabled the validation layer wherever it was installed.\n"
     "    std::vector<const char*> desiredLayerNames;\n"),
]

QUEUE_MARK = "// pyfftgl: queue families queried"
QUEUE_EDITS = [
    ("    } else {\n        this->mComputeQueueFamilyIndices = familyQueueIndices;\n    }\n",
     "    } else {\n"
     f"        {QUEUE_MARK}: a family index is valid only against the count this\n"
     "        // instance was told (VUID-VkDeviceQueueCreateInfo-queueFamilyIndex-00381)\n"
     "        const size_t families = physicalDevice.getQueueFamilyProperties().size();\n"
     "        for (const uint32_t family : familyQueueIndices) {\n"
     "            if (family >= families) {\n"
     "                throw std::runtime_error(fmt::format(\n"
     "                  \"Kompute Manager: queue family {} requested, the device has {}\",\n"
     "                  family,\n"
     "                  families));\n"
     "            }\n"
     "        }\n"
     "        this->mComputeQueueFamilyIndices = familyQueueIndices;\n    }\n"),
    ("    vk::DeviceCreateInfo deviceCreateInfo(vk::DeviceCreateFlags(),\n",
     "    // pyfftgl: a portability (MoltenVK) device requires VK_KHR_portability_subset enabled\n"
     "    if (uniqueExtensionNames.count(\"VK_KHR_portability_subset\") != 0) {\n"
     "        validExtensions.push_back(\"VK_KHR_portability_subset\");\n"
     "    }\n\n"
     "    vk::DeviceCreateInfo deviceCreateInfo(vk::DeviceCreateFlags(),\n"),
]


POOL_MARK = "// pyfftgl: device memory pool"
POOL_HEADER = Path(__file__).resolve().parent / "kp_memory_pool.hpp"
POOL_TENSOR_HEADER_EDITS = [
    ('#include "logger/Logger.hpp"\n',
     f'#include "logger/Logger.hpp"\n{POOL_MARK} (tools/kp_memory_pool.hpp)\n'
     '#include "kompute/MemoryPool.hpp"\n'),
    ("           const TensorTypes& tensorType = TensorTypes::eDevice);\n",
     "           const TensorTypes& tensorType = TensorTypes::eDevice,\n"
     "           std::shared_ptr<MemoryPool> pool = nullptr);\n"),
    ("            const TensorTypes& tensorType = TensorTypes::eDevice)\n",
     "            const TensorTypes& tensorType = TensorTypes::eDevice,\n"
     "            std::shared_ptr<MemoryPool> pool = nullptr)\n"),
    ("               tensorType)\n", "               tensorType,\n               pool)\n"),
    ("    bool mFreeStagingMemory = false;\n",
     "    bool mFreeStagingMemory = false;\n"
     f"    {POOL_MARK} the buffers are bound in, and where\n"
     "    std::shared_ptr<MemoryPool> mPool;\n"
     "    PoolRange mPrimaryRange;\n"
     "    PoolRange mStagingRange;\n"
     "    bool mMapped = false; // memory this tensor mapped itself (not the pool's)\n"),
]
POOL_TENSOR_EDITS = [
    ("               const TensorTypes& tensorType)\n{\n",
     "               const TensorTypes& tensorType,\n"
     "               std::shared_ptr<MemoryPool> pool)\n{\n"),
    ("    this->mTensorType = tensorType;\n",
     f"    this->mTensorType = tensorType;\n    this->mPool = pool; {POOL_MARK}\n"),
    ("    this->rebuild(data, elementTotalCount, elementMemorySize);\n}\n",
     "    try {\n        this->rebuild(data, elementTotalCount, elementMemorySize);\n"
     f"    }} catch (...) {{ {POOL_MARK}: what was allocated before a failure goes back\n"
     "        this->destroy();\n        throw;\n    }\n}\n"),
    ("void\nTensor::mapRawData()\n{\n",
     "void\nTensor::mapRawData()\n{\n"
     f"    {POOL_MARK}: its blocks are mapped once, for their life\n"
     "    const PoolRange& pooled = this->mTensorType == TensorTypes::eDevice\n"
     "                                ? this->mStagingRange\n"
     "                                : this->mPrimaryRange;\n"
     "    if (pooled.block) {\n        this->mRawData = pooled.mapped;\n        return;\n    }\n"),
    ("      *hostVisibleMemory, 0, bufferSize, vk::MemoryMapFlags());\n",
     "      *hostVisibleMemory, 0, bufferSize, vk::MemoryMapFlags());\n"
     "    this->mMapped = true;\n"),
    ("void\nTensor::unmapRawData()\n{\n",
     "void\nTensor::unmapRawData()\n{\n"
     f"    {POOL_MARK}: pooled memory stays mapped by its block\n"
     "    if (!this->mMapped)\n        return;\n    this->mMapped = false;\n"),
    ("    vk::MemoryAllocateInfo memoryAllocateInfo(memoryRequirements.size,\n",
     f"    {POOL_MARK}: bound at an offset in one of its blocks\n"
     "    if (this->mPool) {\n"
     "        PoolRange& range =\n"
     "          memory == this->mStagingMemory ? this->mStagingRange : this->mPrimaryRange;\n"
     "        range = this->mPool->allocate(memoryRequirements, memoryTypeIndex);\n"
     "        *memory = range.memory;\n"
     "        try {\n"
     "            this->mDevice->bindBufferMemory(*buffer, *memory, range.offset);\n"
     "        } catch (...) {\n"
     "            this->mPool->free(range);\n            range = PoolRange();\n            throw;\n"
     "        }\n"
     "        return;\n    }\n\n"
     "    vk::MemoryAllocateInfo memoryAllocateInfo(memoryRequirements.size,\n"),
    ("            this->mDevice->freeMemory(\n"
     "              *this->mPrimaryMemory,\n"
     "              (vk::Optional<const vk::AllocationCallbacks>)nullptr);\n",
     f"            if (this->mPrimaryRange.block) {{ {POOL_MARK}: the range goes back\n"
     "                this->mPool->free(this->mPrimaryRange);\n"
     "                this->mPrimaryRange = PoolRange();\n"
     "            } else {\n"
     "                this->mDevice->freeMemory(\n"
     "                  *this->mPrimaryMemory,\n"
     "                  (vk::Optional<const vk::AllocationCallbacks>)nullptr);\n"
     "            }\n"),
    ("            this->mDevice->freeMemory(\n"
     "              *this->mStagingMemory,\n"
     "              (vk::Optional<const vk::AllocationCallbacks>)nullptr);\n",
     f"            if (this->mStagingRange.block) {{ {POOL_MARK}: the range goes back\n"
     "                this->mPool->free(this->mStagingRange);\n"
     "                this->mStagingRange = PoolRange();\n"
     "            } else {\n"
     "                this->mDevice->freeMemory(\n"
     "                  *this->mStagingMemory,\n"
     "                  (vk::Optional<const vk::AllocationCallbacks>)nullptr);\n"
     "            }\n"),
]
POOL_MANAGER_HEADER_EDITS = [
    ("    template<typename T>\n    std::shared_ptr<TensorT<T>> tensorT(\n",
     f"    {POOL_MARK} every tensor's buffers are allocated from, made on first use\n"
     "    std::shared_ptr<MemoryPool> memoryPool()\n    {\n"
     "        if (!this->mMemoryPool && this->mDevice) {\n"
     "            this->mMemoryPool =\n"
     "              std::make_shared<MemoryPool>(this->mPhysicalDevice, this->mDevice);\n"
     "        }\n        return this->mMemoryPool;\n    }\n\n"
     "    template<typename T>\n    std::shared_ptr<TensorT<T>> tensorT(\n"),
    ("this->mPhysicalDevice, this->mDevice, data, tensorType) };",
     "this->mPhysicalDevice, this->mDevice, data, tensorType, this->memoryPool()) };"),
    ("                                                       tensorType) };",
     "                                                       tensorType,\n"
     "                                                       this->memoryPool()) };"),
    ("    std::shared_ptr<vk::Device> mDevice = nullptr;\n",
     "    std::shared_ptr<vk::Device> mDevice = nullptr;\n"
     "    std::shared_ptr<MemoryPool> mMemoryPool = nullptr; // pyfftgl: memoryPool()\n"),
]
POOL_MANAGER_EDITS = [
    ("    if (this->mFreeDevice) {\n        KP_LOG_INFO(\"Destroying device\");\n",
     f"    {POOL_MARK}: its blocks go before the device (tensors gave their ranges back above)\n"
     "    if (this->mMemoryPool) {\n        this->mMemoryPool->destroy();\n    }\n\n"
     "    if (this->mFreeDevice) {\n        KP_LOG_INFO(\"Destroying device\");\n"),
]
POOL_BINDING_EDITS = [
    ('      .def("destroy", &kp::Manager::destroy, DOC(kp, Manager, destroy))\n',
     '      .def("destroy", &kp::Manager::destroy, DOC(kp, Manager, destroy))\n'
     f"      {POOL_MARK}: its counts, trim() and the allocation limit it keeps to\n"
     '      .def("memory_pool_stats",\n'
     "           [](kp::Manager& self) {\n"
     "               py::dict d;\n"
     "               const auto pool = self.memoryPool();\n"
     "               const kp::MemoryPool::Stats s =\n"
     "                 pool ? pool->stats() : kp::MemoryPool::Stats();\n"
     '               d["used_bytes"] = s.usedBytes;\n'
     '               d["held_bytes"] = s.heldBytes;\n'
     '               d["blocks"] = s.blocks;\n'
     '               d["dedicated"] = s.dedicated;\n'
     '               d["allocations"] = s.allocations;\n'
     '               d["peak_allocations"] = s.peakAllocations;\n'
     '               d["limit"] = s.limit;\n'
     "               return d;\n"
     "           })\n"
     '      .def("memory_pool_trim",\n'
     "           [](kp::Manager& self) -> uint64_t {\n"
     "               const auto pool = self.memoryPool();\n"
     "               return pool ? pool->trim() : 0;\n"
     "           })\n"
     '      .def("memory_pool_limit",\n'
     "           [](kp::Manager& self, uint32_t count) {\n"
     "               const auto pool = self.memoryPool();\n"
     "               if (pool)\n                   pool->setLimit(count);\n"
     "           },\n"
     '           py::arg("count"))\n'),
]


CACHED_MARK = "// pyfftgl: host-visible memory prefers HOST_CACHED"
CACHED_EDITS = [
    ("    uint32_t memoryTypeIndex = -1;\n    bool memoryTypeIndexFound = false;\n"
     "    for (uint32_t i = 0; i < memoryProperties.memoryTypeCount; i++) {\n",
     "    uint32_t memoryTypeIndex = -1;\n    bool memoryTypeIndexFound = false;\n"
     f"    {CACHED_MARK} (the host reads downloads out of it at memcpy's speed)\n"
     "    if (memoryPropertyFlags & vk::MemoryPropertyFlagBits::eHostVisible) {\n"
     "        const vk::MemoryPropertyFlags cached =\n"
     "          memoryPropertyFlags | vk::MemoryPropertyFlagBits::eHostCached;\n"
     "        for (uint32_t i = 0; i < memoryProperties.memoryTypeCount; i++) {\n"
     "            if ((memoryRequirements.memoryTypeBits & (1 << i)) &&\n"
     "                (memoryProperties.memoryTypes[i].propertyFlags & cached) == cached) {\n"
     "                memoryTypeIndex = i;\n                memoryTypeIndexFound = true;\n"
     "                break;\n            }\n        }\n    }\n"
     "    for (uint32_t i = 0; !memoryTypeIndexFound && i < memoryProperties.memoryTypeCount;\n"
     "         i++) {\n"),
]


def _apply(path: Path, edits, done_when: str) -> None:
    text = path.read_text()
    if done_when in text:
        return
    for old, new in edits:
        if text.count(old) != 1:
            sys.exit(f"kp_patch: {path} is not kp 0.9.0 as expected (looking for {old!r})")
        text = text.replace(old, new)
    path.write_text(text)


def main(root: str) -> int:
    _apply(Path(root) / "src" / "Sequence.cpp", EDITS, MARK)
    _apply(Path(root) / "src" / "Sequence.cpp", POLL_EDITS, POLL_MARK)
    _apply(Path(root) / "python" / "src" / "main.cpp", BINDING_EDITS, BARRIER_MARK)
    _apply(Path(root) / "src" / "include" / "kompute" / "Sequence.hpp", STAMP_HEADER_EDITS,
           STAMP_MARK)
    _apply(Path(root) / "src" / "Sequence.cpp", STAMP_EDITS, STAMP_MARK)
    _apply(Path(root) / "python" / "src" / "main.cpp", STAMP_BINDING_EDITS, STAMP_MARK)
    _apply(Path(root) / "src" / "OpAlgoDispatch.cpp", DISPATCH_EDITS, DISPATCH_MARK)
    _apply(Path(root) / "src" / "Manager.cpp", FEATURES_EDITS, FEATURES_MARK)
    inc = Path(root) / "src" / "include" / "kompute"
    _apply(inc / "Algorithm.hpp", SHARE_HEADER_EDITS, SHARE_MARK)
    _apply(Path(root) / "src" / "Algorithm.cpp", SHARE_EDITS, SHARE_MARK)
    _apply(inc / "Manager.hpp", SHARE_MANAGER_EDITS, SHARE_MARK)
    _apply(Path(root) / "python" / "src" / "main.cpp", SHARE_BINDING_EDITS, SHARE_MARK)
    _apply(inc / "Manager.hpp", PRUNE_HEADER_EDITS, PRUNE_MARK)
    _apply(Path(root) / "src" / "Manager.cpp", PRUNE_EDITS, PRUNE_MARK)
    _apply(Path(root) / "src" / "OpMemoryBarrier.cpp", GLOBAL_BARRIER_EDITS, GLOBAL_BARRIER_MARK)
    _apply(inc / "Sequence.hpp", DONE_HEADER_EDITS, DONE_MARK)
    _apply(Path(root) / "src" / "Sequence.cpp", DONE_EDITS, DONE_MARK)
    _apply(Path(root) / "python" / "src" / "main.cpp", DONE_BINDING_EDITS, DONE_MARK)
    _apply(Path(root) / "src" / "Sequence.cpp", RESET_EDITS, RESET_MARK)
    _apply(Path(root) / "src" / "Tensor.cpp", USAGE_EDITS, USAGE_MARK)
    _apply(Path(root) / "src" / "Manager.cpp", INSTANCE_EDITS, INSTANCE_MARK)
    _apply(Path(root) / "src" / "Manager.cpp", QUEUE_EDITS, QUEUE_MARK)
    (inc / "MemoryPool.hpp").write_text(POOL_HEADER.read_text())
    _apply(inc / "Tensor.hpp", POOL_TENSOR_HEADER_EDITS, POOL_MARK)
    _apply(Path(root) / "src" / "Tensor.cpp", POOL_TENSOR_EDITS, POOL_MARK)
    _apply(inc / "Manager.hpp", POOL_MANAGER_HEADER_EDITS, POOL_MARK)
    _apply(Path(root) / "src" / "Manager.cpp", POOL_MANAGER_EDITS, POOL_MARK)
    _apply(Path(root) / "python" / "src" / "main.cpp", POOL_BINDING_EDITS, POOL_MARK)
    _apply(Path(root) / "src" / "Tensor.cpp", CACHED_EDITS, CACHED_MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
