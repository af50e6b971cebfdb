{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_current_state("qlik_ct_demo", "SALES", "ORDER_LINES") }}
