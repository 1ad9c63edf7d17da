/**
 * Photograph-like test images for the media benchmarks (bench/media-variants.ts and the media part
 * of bench/throughput.ts), and the quantile both print.
 */
import sharp from 'sharp'

export function quantile (values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

/**
 * A `w` × `h` photograph-like JPEG, quality 85: noise over gradients, so that it compresses as a
 * photograph does (not as a flat image would). The default is 4 240 × 2 832: 12 megapixels. Each
 * seed gives other bytes, so that the service stores and computes each one anew.
 */
export async function photo (seed: number, w = 4240, h = 2832): Promise<Buffer> {
  const pixels = Buffer.alloc(w * h * 3)
  let x = seed
  for (let i = 0; i < pixels.length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    pixels[i] = ((i / 3) % w) / w * 200 + (x >>> 26)
  }
  return await sharp(pixels, { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 85 }).toBuffer()
}
