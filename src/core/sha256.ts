import * as crypto from "node:crypto";

type OneShotHash = (algorithm: string, data: string, outputEncoding: "hex") => string;
/** Node >= 20.12 hashes a string in one call, about 2.5× faster than a Hash object (what a held msg's ids cost per msg) */
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;

/** The SHA-256 of a string's UTF-8 bytes, as hex. */
export function sha256Hex(text: string): string {
  return oneShot ? oneShot("sha256", text, "hex") : crypto.createHash("sha256").update(text, "utf8").digest("hex");
}
