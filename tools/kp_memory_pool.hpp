// SPDX-License-Identifier: Apache-2.0
// pyfftgl: kp's device memory pool (tools/kp_patch.py, 13), copied into kp's sources as
// src/include/kompute/MemoryPool.hpp before the build.
//
// kp 0.9.0 made one VkDeviceMemory per tensor (two for a device tensor: its buffer and its
// staging buffer), so a program holding a few thousand small arrays met the device's
// maxMemoryAllocationCount (4096 on Windows drivers). The pool binds each buffer at an offset in
// a few large blocks per memory type instead, as VMA does: requests are rounded up to size
// classes and placed best-fit in a block's free ranges, freed ranges merge with their
// neighbours, emptied blocks stay held for reuse until trim(), and buffers of LARGE bytes or
// more keep an allocation of their own, freed with them. Blocks of host-visible memory are
// mapped once, for their life: a tensor's host pointer is an address inside its block.
#pragma once

#include "kompute/Core.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace kp {

// Where a buffer is bound: what a tensor keeps of its pool allocation.
struct PoolRange
{
    vk::DeviceMemory memory;
    vk::DeviceSize offset = 0;
    vk::DeviceSize size = 0; // the bytes the pool counts as used (the size class)
    void* mapped = nullptr;  // the host address of offset, for host-visible memory
    uint64_t block = 0;      // the block's id; 0: none (not from the pool)
};

class MemoryPool
{
  public:
    static constexpr vk::DeviceSize GRANULE = 256;           // offsets and sizes: multiples
    static constexpr vk::DeviceSize FIRST_BLOCK = 1 << 20;   // a memory type's first block
    static constexpr vk::DeviceSize LARGEST_BLOCK = 64 << 20; // blocks double up to this
    static constexpr vk::DeviceSize LARGE = 16 << 20;        // and own allocations from this

    struct Stats
    {
        uint64_t usedBytes = 0, heldBytes = 0, blocks = 0, dedicated = 0, allocations = 0;
        uint64_t limit = 0, peakAllocations = 0;
    };

    MemoryPool(std::shared_ptr<vk::PhysicalDevice> physicalDevice,
               std::shared_ptr<vk::Device> device)
      : mDevice(device)
    {
        this->mProperties = physicalDevice->getMemoryProperties();
        this->mLimit = physicalDevice->getProperties().limits.maxMemoryAllocationCount;
        this->mDeviceLimit = this->mLimit;
    }

    ~MemoryPool() { this->destroy(); }

    // Hold the pool to at most `count` allocations (0: the device's maxMemoryAllocationCount);
    // never above the device's own limit.
    void setLimit(uint32_t count)
    {
        std::lock_guard<std::mutex> lock(this->mMutex);
        this->mLimit = count ? std::min(count, this->mDeviceLimit) : this->mDeviceLimit;
    }

    // The size class of a request: multiples of GRANULE to 64 KiB, then quarter steps between
    // powers of two (at most a quarter wasted), so that a freed range fits its size's next use.
    static vk::DeviceSize sizeClass(vk::DeviceSize n)
    {
        n = std::max<vk::DeviceSize>(n, 1);
        vk::DeviceSize step = GRANULE;
        if (n > (64 << 10)) {
            vk::DeviceSize p = 1;
            while (p * 2 <= n)
                p *= 2;
            step = p / 4;
        }
        return (n + step - 1) / step * step;
    }

    PoolRange allocate(const vk::MemoryRequirements& req, uint32_t typeIndex)
    {
        std::lock_guard<std::mutex> lock(this->mMutex);
        if (this->mDevice == nullptr)
            throw std::runtime_error("Kompute MemoryPool: the device is destroyed");
        const vk::DeviceSize align = std::max<vk::DeviceSize>(req.alignment, GRANULE);
        const vk::DeviceSize size = sizeClass(req.size);
        // A large request has its own allocation, unless none is left to make
        if (size < LARGE || this->mBlocks.size() >= this->mLimit) {
            for (auto& entry : this->mBlocks) {
                Block& b = entry.second;
                if (b.type == typeIndex && !b.dedicated) {
                    PoolRange r;
                    if (this->place(entry.first, b, size, align, r))
                        return r;
                }
            }
        }
        const bool dedicated = size >= LARGE;
        const vk::DeviceSize blockSize =
          dedicated ? size : std::max(size, this->nextBlockSize(typeIndex));
        const uint64_t id = this->newBlock(typeIndex, blockSize, size, dedicated);
        PoolRange r;
        if (!this->place(id, this->mBlocks.at(id), size, align, r)) // a fresh block fits
            throw std::runtime_error("Kompute MemoryPool: a new block cannot hold its request");
        return r;
    }

    void free(const PoolRange& r)
    {
        std::lock_guard<std::mutex> lock(this->mMutex);
        auto it = this->mBlocks.find(r.block);
        if (it == this->mBlocks.end())
            return; // the pool was destroyed (the device went) before this buffer
        Block& b = it->second;
        b.used -= r.size;
        b.live -= 1;
        this->mUsed -= r.size;
        if (b.dedicated) {
            this->release(it);
            return;
        }
        vk::DeviceSize off = r.offset, len = r.size;
        auto next = b.byOffset.lower_bound(off);
        if (next != b.byOffset.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second == off) {
                off = prev->first;
                len += prev->second;
                forget(b, prev);
            }
        }
        if (next != b.byOffset.end() && off + len == next->first) {
            len += next->second;
            forget(b, next);
        }
        b.byOffset[off] = len;
        b.bySize.emplace(len, off);
    }

    // Free the blocks no buffer uses; returns the bytes freed.
    uint64_t trim()
    {
        std::lock_guard<std::mutex> lock(this->mMutex);
        return this->trimLocked();
    }

    Stats stats()
    {
        std::lock_guard<std::mutex> lock(this->mMutex);
        Stats s;
        s.usedBytes = this->mUsed;
        for (const auto& entry : this->mBlocks) {
            s.heldBytes += entry.second.size;
            s.blocks += !entry.second.dedicated;
            s.dedicated += entry.second.dedicated;
        }
        s.allocations = this->mBlocks.size();
        s.limit = this->mLimit;
        s.peakAllocations = this->mPeak;
        return s;
    }

    // Free every block (the device is being destroyed): buffers still bound are the caller's.
    void destroy()
    {
        std::lock_guard<std::mutex> lock(this->mMutex);
        if (this->mDevice) {
            while (!this->mBlocks.empty())
                this->release(this->mBlocks.begin());
            this->mUsed = 0;
            this->mDevice = nullptr;
        }
    }

  private:
    struct Block
    {
        vk::DeviceMemory memory;
        uint32_t type = 0;
        vk::DeviceSize size = 0, used = 0;
        uint64_t live = 0;
        bool dedicated = false;
        char* mapped = nullptr;
        std::map<vk::DeviceSize, vk::DeviceSize> byOffset;   // free ranges: offset -> size
        std::multimap<vk::DeviceSize, vk::DeviceSize> bySize; // the same: size -> offset
    };

    std::mutex mMutex;
    std::shared_ptr<vk::Device> mDevice;
    vk::PhysicalDeviceMemoryProperties mProperties;
    uint32_t mLimit = 0, mDeviceLimit = 0;
    uint64_t mNextId = 1, mUsed = 0, mPeak = 0;
    std::map<uint64_t, Block> mBlocks; // oldest first: small ids fill before new blocks

    static void forget(Block& b, std::map<vk::DeviceSize, vk::DeviceSize>::iterator it)
    {
        auto range = b.bySize.equal_range(it->second);
        for (auto s = range.first; s != range.second; ++s) {
            if (s->second == it->first) {
                b.bySize.erase(s);
                break;
            }
        }
        b.byOffset.erase(it);
    }

    // Best fit in b's free ranges: the smallest that holds size bytes at an aligned offset.
    bool place(uint64_t id, Block& b, vk::DeviceSize size, vk::DeviceSize align, PoolRange& r)
    {
        for (auto s = b.bySize.lower_bound(size); s != b.bySize.end(); ++s) {
            const vk::DeviceSize off = s->second, len = s->first;
            const vk::DeviceSize at = (off + align - 1) / align * align;
            if (at + size > off + len)
                continue;
            forget(b, b.byOffset.find(off));
            if (at > off) {
                b.byOffset[off] = at - off;
                b.bySize.emplace(at - off, off);
            }
            if (at + size < off + len) {
                b.byOffset[at + size] = off + len - at - size;
                b.bySize.emplace(off + len - at - size, at + size);
            }
            b.used += size;
            b.live += 1;
            this->mUsed += size;
            r.memory = b.memory;
            r.offset = at;
            r.size = size;
            r.mapped = b.mapped ? b.mapped + at : nullptr;
            r.block = id;
            return true;
        }
        return false;
    }

    // Blocks of a type double in size, from FIRST_BLOCK to LARGEST_BLOCK, with their number;
    // past half the allocation limit every new block is the largest.
    vk::DeviceSize nextBlockSize(uint32_t typeIndex) const
    {
        vk::DeviceSize size = FIRST_BLOCK;
        for (const auto& entry : this->mBlocks) {
            if (entry.second.type == typeIndex && !entry.second.dedicated)
                size = std::min(size * 2, LARGEST_BLOCK);
        }
        if (2 * this->mBlocks.size() >= this->mLimit)
            size = LARGEST_BLOCK;
        const vk::DeviceSize heap =
          this->mProperties.memoryHeaps[this->mProperties.memoryTypes[typeIndex].heapIndex].size;
        return std::max<vk::DeviceSize>(std::min(size, heap / 8), GRANULE);
    }

    uint64_t newBlock(uint32_t typeIndex, vk::DeviceSize size, vk::DeviceSize need, bool dedicated)
    {
        if (this->mBlocks.size() >= this->mLimit)
            this->trimLocked(); // empty blocks of any memory type make room first
        if (this->mBlocks.size() >= this->mLimit) {
            throw std::runtime_error(
              "Kompute MemoryPool: out of device memory allocations: all " +
              std::to_string(this->mLimit) +
              " that the device allows (maxMemoryAllocationCount, or PYFFTGL_VK_MAX_ALLOCATIONS)"
              " are in use, and none has room for " + std::to_string(need) + " bytes");
        }
        vk::DeviceMemory memory;
        vk::Result result = vk::Result::eErrorOutOfDeviceMemory;
        for (int attempt = 0; attempt < 3 && result != vk::Result::eSuccess; ++attempt) {
            if (attempt == 1)
                this->trimLocked(); // held empty blocks give their memory back, then retry
            if (attempt == 2)
                size = need; // then only what this request needs
            const vk::MemoryAllocateInfo info(size, typeIndex);
            result = this->mDevice->allocateMemory(&info, nullptr, &memory);
        }
        if (result != vk::Result::eSuccess) {
            throw std::runtime_error("Kompute MemoryPool: vkAllocateMemory of " +
                                     std::to_string(size) + " bytes failed (out of memory: " +
                                     vk::to_string(result) + ")");
        }
        Block b;
        b.memory = memory;
        b.type = typeIndex;
        b.size = size;
        b.dedicated = dedicated;
        if (this->mProperties.memoryTypes[typeIndex].propertyFlags &
            vk::MemoryPropertyFlagBits::eHostVisible) {
            try {
                b.mapped = static_cast<char*>(
                  this->mDevice->mapMemory(memory, 0, VK_WHOLE_SIZE, vk::MemoryMapFlags()));
            } catch (...) {
                this->mDevice->freeMemory(
                  memory, (vk::Optional<const vk::AllocationCallbacks>)nullptr);
                throw;
            }
        }
        b.byOffset[0] = size;
        b.bySize.emplace(size, 0);
        const uint64_t id = this->mNextId++;
        this->mBlocks.emplace(id, std::move(b));
        this->mPeak = std::max<uint64_t>(this->mPeak, this->mBlocks.size());
        return id;
    }

    void release(std::map<uint64_t, Block>::iterator it)
    {
        // vkFreeMemory unmaps a mapped block implicitly
        this->mDevice->freeMemory(it->second.memory,
                                  (vk::Optional<const vk::AllocationCallbacks>)nullptr);
        this->mBlocks.erase(it);
    }

    uint64_t trimLocked()
    {
        uint64_t freed = 0;
        for (auto it = this->mBlocks.begin(); it != this->mBlocks.end();) {
            if (it->second.live == 0 && this->mDevice) {
                freed += it->second.size;
                auto gone = it++;
                this->release(gone);
            } else {
                ++it;
            }
        }
        return freed;
    }
};

} // namespace kp
