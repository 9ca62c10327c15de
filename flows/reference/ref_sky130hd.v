// Calibration reference for sky130hd (flows/calibration.py computes its power by hand).
// A register fed by input din drives an inverter chain; the last inverter fans out to three
// loaded output ports, and an XOR of the chain with a second input e drives a fourth.
module memwall_ref (clk, din, e, y0, y1, y2, y3);
  input clk;
  input din;
  input e;
  output y0;
  output y1;
  output y2;
  output y3;
  wire q;
  wire n1;
  wire n2;
  sky130_fd_sc_hd__dfxtp_1 r0 (.CLK(clk), .D(din), .Q(q));
  sky130_fd_sc_hd__inv_1 u1 (.A(q), .Y(n1));
  sky130_fd_sc_hd__inv_1 u2 (.A(n1), .Y(n2));
  sky130_fd_sc_hd__inv_1 u3 (.A(n2), .Y(y0));
  sky130_fd_sc_hd__inv_1 u4 (.A(n2), .Y(y1));
  sky130_fd_sc_hd__inv_1 u5 (.A(n2), .Y(y2));
  sky130_fd_sc_hd__xor2_1 u6 (.A(n1), .B(e), .X(y3));
endmodule
