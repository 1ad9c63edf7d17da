import sharp from 'sharp'

/** A photograph-like JPEG `w`×`h` as stored by a camera held sideways: EXIF orientation 6 and a GPS position. */
export async function sidewaysJpeg (w = 400, h = 300): Promise<Buffer> {
  return await sharp({ create: { width: w, height: h, channels: 3, background: { r: 200, g: 40, b: 90 } } })
    .composite([{ input: { create: { width: Math.floor(w / 2), height: Math.floor(h / 3), channels: 3, background: { r: 10, g: 200, b: 30 } } }, left: 0, top: 0 }])
    .jpeg({ quality: 80 })
    .withMetadata({ orientation: 6 })
    .withExifMerge({ IFD0: { Make: 'TestCam', ImageDescription: 'secret place' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 24/1' } })
    .toBuffer()
}

export async function png (w = 64, h = 48): Promise<Buffer> {
  return await sharp({ create: { width: w, height: h, channels: 4, background: { r: 0, g: 120, b: 255, alpha: 1 } } }).png().toBuffer()
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

function crc32 (buf: Buffer): number {
  let c = 0xffffffff
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

/** A valid 1×1 PNG whose header is rewritten to declare `w`×`h` pixels (a decompression bomb's header). */
export async function lyingPng (w: number, h: number): Promise<Buffer> {
  const real = await png(1, 1)
  const out = Buffer.from(real)
  // IHDR: after the 8-byte signature, length (4), type (4), then width and height.
  out.writeUInt32BE(w, 16)
  out.writeUInt32BE(h, 20)
  out.writeUInt32BE(crc32(out.subarray(12, 29)), 29)
  return out
}

export const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>')

/** A JPEG of noise (it does not compress): `w`×`h`, about 3 bytes a pixel at quality 90, EXIF orientation 6. */
export async function noisyJpeg (w: number, h: number): Promise<Buffer> {
  const pixels = Buffer.alloc(w * h * 3)
  let x = 12345
  for (let i = 0; i < pixels.length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    pixels[i] = x >>> 16
  }
  return await sharp(pixels, { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 90 }).withMetadata({ orientation: 6 }).toBuffer()
}
