// sdspeed --dump-kernels: gemm_tiled_f16a16
// glslc -D: SFP_F16=1 AFP_F16=1
// specialization constants: 0=256 1=64 2=64 3=16 4=4 5=4 6=1 7=1 8=1 20=1
// push constants: 24 bytes; storage buffers: 5
#version 450
#extension GL_GOOGLE_include_directive : enable
#line 1 "/work/main/kernels/gemm/gemm_tiled.comp"


















#line 1 "/work/main/kernels/gemm/../common/prelude.glsl"











#extension GL_EXT_control_flow_attributes : require

#extension GL_EXT_shader_16bit_storage : require





#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require







const uint SD_NCHW = 0u;
const uint SD_NC4HW4 = 1u;






uint sd_index(uint layout_, uint n, uint c, uint hw, uint C, uint HW){
  const uint nchw =(n * C + c)* HW + hw;
  const uint S =(C + 3u)/ 4u;
  const uint nc4 =((n * S + c / 4u)* HW + hw)* 4u +(c & 3u);
  return layout_ == SD_NCHW ? nchw : nc4;
}












uint sd_stored_channels(uint layout_, uint C){ return layout_ == SD_NCHW ? C :(C + 3u)/ 4u * 4u;}
#line 20 "/work/main/kernels/gemm/gemm_tiled.comp"
#line 1 "/work/main/kernels/gemm/../common/act.glsl"






float erfc_nr(float z){
  const float t = 1.0 /(1.0 + 0.5 * abs(z));
  const float r = t * exp(- z * z - 1.26551223 + t *(1.00002368 + t *(0.37409196 + t *(0.09678418 +
                  t *(- 0.18628806 + t *(0.27886807 + t *(- 1.13520398 + t *(1.48851587 +
                  t *(- 0.82215223 + t * 0.17087277)))))))));
  return z >= 0.0 ? r : 2.0 - r;
}

  float16_t gelu(float16_t v){ return float16_t(0.5)* v * float16_t(erfc_nr(- float(v)* 0.70710678118654752));}



  float16_t sigmoid_times(float16_t v, float16_t a){ return v /(float16_t(1.0)+ exp(- a * v));}

  float16_t apply(float16_t v, uint fn){
  if(fn == 0u)return gelu(v);
  if(fn == 1u){


    const float16_t u = float16_t(0.79788456080286536)*(v + float16_t(0.044715)* v * v * v);
    return float16_t(0.5)* v *(float16_t(2.0)- float16_t(2.0)/(exp(float16_t(2.0)* u)+ float16_t(1.0)));
  }
  if(fn == 2u)return sigmoid_times(v, float16_t(1.702));
  return sigmoid_times(v, float16_t(1.0));
}

#line 21 "/work/main/kernels/gemm/gemm_tiled.comp"
#line 1 "/work/main/kernels/gemm/../common/weights.glsl"





















layout(constant_id = 20)const uint SD_WFMT = 0;
const uint SD_PFMT = SD_WFMT == 0u ? 0u : 1u;


























#line 22 "/work/main/kernels/gemm/gemm_tiled.comp"

layout(local_size_x_id = 0)in;
layout(constant_id = 1)const uint MWG = 64;
layout(constant_id = 2)const uint NWG = 64;
layout(constant_id = 3)const uint KWG = 16;
layout(constant_id = 4)const uint MWI = 4;
layout(constant_id = 5)const uint NWI = 4;
layout(constant_id = 6)const uint SB = 1;
layout(constant_id = 7)const uint PAIRS = 1;
layout(constant_id = 8)const uint PF = 0;

const uint MD = MWG / MWI, ND = NWG / NWI, WGS = MD * ND;
const uint XT = KWG * MWG;
const uint WT = KWG * PAIRS * NWG * SB;
const uint XL =(XT + WGS - 1u)/ WGS;
const uint WL =(WT + WGS - 1u)/ WGS;

layout(std430, binding = 0)readonly buffer X { float16_t x[];};
                        layout(std430, binding = 1)readonly buffer W { uint w[];};float w_half(uint byteOff){ const uint word = w[byteOff >> 2u];return unpackHalf2x16((byteOff & 2u)!= 0u ? word >> 16u : word). x;} uint w_byte(uint byteOff){ return(w[byteOff >> 2u]>>((byteOff & 3u)* 8u))& 255u;} float w_p(uint i){ return SD_PFMT == 0u ? uintBitsToFloat(w[i]): w_half(i * 2u);} float w_w(uint row, uint k, uint K){ if(SD_WFMT == 0u)return uintBitsToFloat(w[row * K + k]);if(SD_WFMT == 1u)return w_half((row * K + k)* 2u);const uint j = k & 31u, blk = row *((K + 31u)/ 32u)+ k / 32u;if(SD_WFMT == 2u){ const uint o = blk * 34u;return w_half(o)* float(bitfieldExtract(int(w_byte(o + 2u + j)), 0, 8));} const uint o = blk * 18u, byte_ = w_byte(o + 2u +(j & 15u));return w_half(o)* float(int(j < 16u ?(byte_ & 15u):(byte_ >> 4u))- 8);}
                               layout(std430, binding = 2)readonly buffer Bias { uint wbias[];};float wbias_half(uint byteOff){ const uint word = wbias[byteOff >> 2u];return unpackHalf2x16((byteOff & 2u)!= 0u ? word >> 16u : word). x;} uint wbias_byte(uint byteOff){ return(wbias[byteOff >> 2u]>>((byteOff & 3u)* 8u))& 255u;} float wbias_p(uint i){ return SD_PFMT == 0u ? uintBitsToFloat(wbias[i]): wbias_half(i * 2u);} float wbias_w(uint row, uint k, uint K){ if(SD_WFMT == 0u)return uintBitsToFloat(wbias[row * K + k]);if(SD_WFMT == 1u)return wbias_half((row * K + k)* 2u);const uint j = k & 31u, blk = row *((K + 31u)/ 32u)+ k / 32u;if(SD_WFMT == 2u){ const uint o = blk * 34u;return wbias_half(o)* float(bitfieldExtract(int(wbias_byte(o + 2u + j)), 0, 8));} const uint o = blk * 18u, byte_ = wbias_byte(o + 2u +(j & 15u));return wbias_half(o)* float(int(j < 16u ?(byte_ & 15u):(byte_ >> 4u))- 8);}
layout(std430, binding = 3)readonly buffer R { float16_t res[];};
layout(std430, binding = 4)writeonly buffer Y { float16_t y[];};
layout(push_constant)uniform Push {
  uint K, F, HW, epi, flags, layout_;
} p;

shared float16_t As[XT];
shared float16_t Bs[WT + 1u];

float xr[XL];
float wr[WL + 1u];



void loadGlobal(uint b, uint m0, uint n0, uint k0){
  const uint lid = gl_LocalInvocationID . x;
  [[unroll]]for(uint i = 0u;i < XL;++ i){
    const uint e = lid + i * WGS, kk = e / MWG, mm = e % MWG;
    const uint k = k0 + kk, t = m0 + mm;
    const bool ok = all(bvec3(e < XT, k < p . K, t < p . HW));
    const float v = float(x[sd_index(p . layout_, b,((ok)?(k): 0u),((ok)?(t): 0u), p . K, p . HW)]);
    xr[i]= ok ? v : 0.0;
  }
  if(SB == 1u){
    [[unroll]]for(uint i = 0u;i < WL;++ i){

      const uint e = lid + i * WGS, kk = e % KWG, nn = e / KWG;
      const uint pair = nn / NWG, o = n0 + nn % NWG, k = k0 + kk;
      const bool ok = all(bvec3(e < WT, k < p . K, o < p . F));
      const float v = w_w(((ok)?(pair * p . F + o): 0u),((ok)?(k): 0u), p . K);
      wr[i]= ok ? v : 0.0;
    }
  }
}

void storeShared(){
  const uint lid = gl_LocalInvocationID . x;
  [[unroll]]for(uint i = 0u;i < XL;++ i){
    const uint e = lid + i * WGS;
    if(e < XT)As[e]= float16_t(xr[i]);
  }
  if(SB == 1u)
    [[unroll]]for(uint i = 0u;i < WL;++ i){
      const uint e = lid + i * WGS;
      if(e < WT)Bs[(e % KWG)*(PAIRS * NWG)+ e / KWG]= float16_t(wr[i]);
    }
}

void main(){
  const uint lid = gl_LocalInvocationID . x, tm = lid % MD, tn = lid / MD;
  const uint m0 = gl_WorkGroupID . x * MWG, n0 = gl_WorkGroupID . y * NWG, b = gl_WorkGroupID . z;
  float acc[MWI][2u * NWI];
  [[unroll]]for(uint i = 0u;i < MWI;++ i)
    [[unroll]]for(uint j = 0u;j < 2u * NWI;++ j)acc[i][j]= 0.0;

  if(PF == 1u)loadGlobal(b, m0, n0, 0u);
  for(uint k0 = 0u;k0 < p . K;k0 += KWG){
    if(PF == 0u)loadGlobal(b, m0, n0, k0);
    barrier();
    storeShared();
    barrier();
    if(PF == 1u && k0 + KWG < p . K)loadGlobal(b, m0, n0, k0 + KWG);

      float16_t part[MWI][2u * NWI];
    [[unroll]]for(uint i = 0u;i < MWI;++ i)
      [[unroll]]for(uint j = 0u;j < 2u * NWI;++ j)part[i][j]= float16_t(0.0);




    [[unroll]]for(uint kk = 0u;kk < KWG;++ kk){
        float16_t a[MWI];
      [[unroll]]for(uint i = 0u;i < MWI;++ i)a[i]= As[kk * MWG + tm + i * MD];
      [[unroll]]for(uint q = 0u;q < PAIRS;++ q)
        [[unroll]]for(uint j = 0u;j < NWI;++ j){
            float16_t bv;
          if(SB == 1u){
            bv = Bs[kk *(PAIRS * NWG)+ q * NWG + tn + j * ND];
          } else {


            const uint o = min(n0 + tn + j * ND, p . F - 1u), k = min(k0 + kk, p . K - 1u);
            bv = float16_t(w_w(q * p . F + o, k, p . K));
          }
          [[unroll]]for(uint i = 0u;i < MWI;++ i)part[i][q * NWI + j]+= a[i]* bv;
        }
    }

    [[unroll]]for(uint i = 0u;i < MWI;++ i)
      [[unroll]]for(uint j = 0u;j < PAIRS * NWI;++ j)acc[i][j]+= float(part[i][j]);

  }

  const bool hasBias =(p . flags & 1u)!= 0u, hasRes =(p . flags & 2u)!= 0u;
  const uint stored = sd_stored_channels(p . layout_, p . F);
  [[unroll]]for(uint j = 0u;j < NWI;++ j){
    const uint o = n0 + tn + j * ND;
    if(o >= stored)continue;
    [[unroll]]for(uint i = 0u;i < MWI;++ i){
      const uint t = m0 + tm + i * MD;
      if(t >= p . HW)continue;

        float16_t out_ = float16_t(0.0);
      if(o < p . F){
        const float16_t h = float16_t(acc[i][j]+(hasBias ? wbias_p(o): 0.0));
        if(PAIRS == 2u){
          const float16_t g = float16_t(acc[i][NWI + j]+(hasBias ? wbias_p(p . F + o): 0.0));
          out_ = h * gelu(g);
        } else {
          out_ = p . epi == 0u ? h : apply(h, p . epi - 1u);
        }
        if(hasRes)out_ += float16_t(res[sd_index(p . layout_, b, o, t, p . F, p . HW)]);
      }
      y[sd_index(p . layout_, b, o, t, p . F, p . HW)]= float16_t(out_);
    }
  }
}
