"""cocotb testbenches of the KVNAND plane logic."""
