#include "runtime/graph/GraphCommands.h"

namespace vkd::graph {

void record_copy(vk::CommandBuffer& cb, const GpuTensor& t, VkBuffer staging, bool to_device,
                 uint64_t staging_offset) {
  if (!t.is_image()) {
    VkBufferCopy region{to_device ? staging_offset : 0, to_device ? 0 : staging_offset, t.bytes()};
    if (to_device) {
      cb.copy_buffer(staging, t.buffer().handle(), region);
    } else {
      cb.copy_buffer(t.buffer().handle(), staging, region);
    }
    return;
  }
  VkBufferImageCopy region{};
  region.bufferOffset = staging_offset;
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = t.image().extent();
  const VkImage image = t.image().handle();
  const VkImageLayout copy_layout =
      to_device ? VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL : VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  cb.image_layout(image, VK_IMAGE_LAYOUT_GENERAL, copy_layout);
  if (to_device) {
    cb.copy_buffer_to_image(staging, image, copy_layout, region);
  } else {
    cb.copy_image_to_buffer(image, copy_layout, staging, region);
  }
  cb.image_layout(image, copy_layout, VK_IMAGE_LAYOUT_GENERAL);
}

}  // namespace vkd::graph
