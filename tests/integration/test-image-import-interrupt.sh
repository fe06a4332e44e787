#!/bin/bash
. "$(dirname "$0")/lib.sh"
