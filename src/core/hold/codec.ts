import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/**
 * How a held msg's JSON is stored (Redis values, the memory store's file).
 * With `hashRecipients` the msg is encrypted, so no address sits in the store.
 */
export interface DeferCodec {
  encode(json: string): string;
  /** throws when the value cannot be read (another key, damaged) */
  decode(stored: string): string;
}

export const plainCodec: DeferCodec = {
  encode: (json) => json,
  decode: (stored) => stored,
};

const VERSION = "sg1.";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM with a key derived (HKDF-SHA256) from the cap-config's HMAC
 * secret: `sg1.` + base64(iv | tag | ciphertext), a fresh random IV per value.
 * `encrypt` false writes plain JSON but still reads values encrypted before
 * (hashRecipients turned off while msgs were held), and a plain value is read
 * as it is (turned on): only a changed secret makes a held msg unreadable
 * (it is reported and dropped).
 */
export function deferCodec(secret: string | undefined, encrypt: boolean): DeferCodec {
  const key = secret === undefined ? undefined
    : Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), Buffer.from("sendgate", "utf8"), Buffer.from("defer-queue aes-256-gcm v1", "utf8"), 32));
  if (encrypt && !key) throw new Error("deferCodec: encrypting needs the HMAC secret");
  return {
    encode(json) {
      if (!encrypt || !key) return json;
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const body = Buffer.concat([cipher.update(json, "utf8"), cipher.final()]);
      return VERSION + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
    },
    decode(stored) {
      if (!stored.startsWith(VERSION)) return stored;
      if (!key) throw new Error("the held msg is encrypted and the cap-config has no HMAC secret");
      const raw = Buffer.from(stored.slice(VERSION.length), "base64");
      if (raw.length < IV_BYTES + TAG_BYTES) throw new Error("encrypted held msg is truncated");
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
    },
  };
}
