{{ config(materialized='view') }}
{{ cdc_typed_history("qlik_ct_demo", "SALES", "ORDER_LINES") }}
