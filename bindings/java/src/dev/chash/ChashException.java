// SPDX-License-Identifier: Apache-2.0
package dev.chash;

/**
 * A spec, node list or membership change that libchash refused: an unknown preset or algorithm,
 * an option the placement does not take, an empty or duplicate node list, an unknown node. The
 * message is libchash's own (it names the problem); {@link #code()} is its CHASH_ERR_* code.
 */
public class ChashException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final int code;
  private final String status;

  // Called from the JNI layer (native/chash_jni.c) with chash_error_code/chash_status_name.
  ChashException(int code, String status, String message) {
    super(message + " (" + status + ")");
    this.code = code;
    this.status = status;
  }

  /** The C ABI's status code (CHASH_ERR_PARSE is 7 ...), stable between versions. */
  public int code() {
    return code;
  }

  /** The code's name, e.g. "CHASH_ERR_UNKNOWN_NODE". */
  public String status() {
    return status;
  }
}
