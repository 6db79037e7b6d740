# SPDX-License-Identifier: Apache-2.0
"""Drop-in replacements for other Python hashing libraries, backed by chash's presets."""
