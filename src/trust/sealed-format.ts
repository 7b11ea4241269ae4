/**
 * The age format at its edges: armored text in and out, each failure a plain message that quotes
 * nothing of the text (src/config/sealed.ts says where sealed values live on a stick).
 */
import { armor, Encrypter } from 'age-encryption';

export class SealedFormatError extends Error {}

/** The binary age file an armored value holds; refused with a plain reason when it is not one. */
export function decodeSealed(text: string): Uint8Array {
  try {
    return armor.decode(text);
  } catch (err) {
    throw new SealedFormatError(`the sealed value is not armored age (${(err as Error).message})`);
  }
}

/** Plaintext sealed to one age recipient, armored (one text any age tool opens with the identity). */
export async function sealTo(recipient: string, plain: Uint8Array | string): Promise<string> {
  const encrypter = new Encrypter();
  encrypter.addRecipient(recipient);
  return armor.encode(await encrypter.encrypt(plain));
}
